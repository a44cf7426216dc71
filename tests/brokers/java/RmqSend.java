// Sends N messages to one queue of a RocketMQ topic (or round-robin over a comma-separated list of queues), bodies
// "seq-<n>" padded to a size, one line per message: "SENT <seq> <status> <queueOffset> <queue> <offsetMsgId>".
// Compiled with RmqLab.java against a 4.9 or 5.x client jar.
// Usage: RmqSend NAMESRV TOPIC BROKER_NAME QUEUE FIRST COUNT BODY_BYTES
public class RmqSend {
    public static void main(String[] args) throws Exception {
        var a = RmqLab.SendArgs.parse(args);
        var producer = RmqLab.producer("replog-lab-producer", a.namesrv(), 30000);
        RmqLab.sending(producer, a.topic(), () -> {
            for (long seq = a.first(); seq < a.first() + a.count(); seq++) {
                var result = producer.send(a.message(seq), a.messageQueue(seq));
                System.out.println(RmqLab.sent(seq, result, a.queue(seq)));
            }
        });
    }
}
