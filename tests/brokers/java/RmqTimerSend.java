// Sends N timer (scheduled) messages to a RocketMQ 5.x topic, round-robin over a comma-separated list of queues,
// bodies "seq-<n>" padded to a size, each with `Message#setDelayTimeMs(DELAY_MS)` (the 5.x timer property
// TIMER_DELAY_MS: a broker with timerWheelEnable puts it in rmq_sys_wheel_timer and the timer wheel delivers it to
// the topic later). One line per message: "SENT <seq> <status> <queueOffset> <queue> <offsetMsgId> <msgId>".
// Usage: RmqTimerSend NAMESRV TOPIC BROKER_NAME QUEUES FIRST COUNT BODY_BYTES DELAY_MS
public class RmqTimerSend {
    public static void main(String[] args) throws Exception {
        var a = RmqLab.SendArgs.parse(args);
        long delayMs = Long.parseLong(args[7]);
        var producer = RmqLab.producer("replog-lab-timer-producer", a.namesrv(), 30000);
        RmqLab.sending(producer, a.topic(), () -> {
            for (long seq = a.first(); seq < a.first() + a.count(); seq++) {
                var msg = a.message(seq);
                msg.setDelayTimeMs(delayMs);
                var result = producer.send(msg, a.messageQueue(seq));
                System.out.println(RmqLab.sent(seq, result, a.queue(seq)) + " " + result.getMsgId());
            }
        });
    }
}
