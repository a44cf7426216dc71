// Sends N timer (scheduled) messages to a RocketMQ 5.x topic, round-robin over a comma-separated list of queues,
// bodies "seq-<n>" padded to a size, each with `Message#setDelayTimeMs(DELAY_MS)` (the 5.x timer property
// TIMER_DELAY_MS: a broker with timerWheelEnable puts it in rmq_sys_wheel_timer and the timer wheel delivers it to
// the topic later). One line per message: "SENT <seq> <status> <queueOffset> <queue> <offsetMsgId> <msgId>".
// Usage: java -cp CP RmqTimerSend.java NAMESRV TOPIC BROKER_NAME QUEUES FIRST COUNT BODY_BYTES DELAY_MS
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

public class RmqTimerSend {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], brokerName = args[2];
        String[] queues = args[3].split(",");
        long first = Long.parseLong(args[4]);
        int count = Integer.parseInt(args[5]), bodyBytes = Integer.parseInt(args[6]);
        long delayMs = Long.parseLong(args[7]);
        var producer = new DefaultMQProducer("replog-lab-timer-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("replog-lab-" + System.nanoTime());
        producer.setSendMsgTimeout(30000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        try {
            waitForRoute(producer, topic);
            for (long seq = first; seq < first + count; seq++) {
                int queue = Integer.parseInt(queues[(int) ((seq - first) % queues.length)]);
                var mq = new MessageQueue(topic, brokerName, queue);
                StringBuilder body = new StringBuilder("seq-" + seq + "-");
                while (body.length() < bodyBytes) body.append('x');
                var msg = new Message(topic, "lab", body.toString().getBytes("UTF-8"));
                msg.setKeys("k" + seq);
                msg.setDelayTimeMs(delayMs);
                var result = producer.send(msg, mq);
                System.out.println("SENT " + seq + " " + result.getSendStatus() + " " + result.getQueueOffset()
                    + " " + queue + " " + result.getOffsetMsgId() + " " + result.getMsgId());
            }
        } finally {
            producer.shutdown();
        }
    }

    static void waitForRoute(DefaultMQProducer producer, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + 60000;
        while (true) {
            try {
                if (!producer.fetchPublishMessageQueues(topic).isEmpty()) return;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            Thread.sleep(500);
        }
    }
}
