// DLedgerSend: RmqSend that goes on after a failed send (a DLedger leader without its quorum answers each send with an
// error after maxWaitAckTimeMs while the entry stays in its log): "FAIL <seq> <exception>" for those.
// Sends N messages to one queue of a RocketMQ topic (or round-robin over a comma-separated list of queues), bodies
// "seq-<n>" padded to a size, one line per message: "SENT <seq> <status> <queueOffset> <queue> <offsetMsgId>". Run with the source launcher against a 4.9 or 5.x client jar
// (the types are the same; `var` keeps the 4.9/5.x package moves out of the source).
// Usage: java -cp CP DLedgerSend.java NAMESRV TOPIC BROKER_NAME QUEUE FIRST COUNT BODY_BYTES [ATTEMPTS [GO_FILE]]
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

public class DLedgerSend {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], brokerName = args[2];
        String[] queues = args[3].split(",");
        long first = Long.parseLong(args[4]);
        int count = Integer.parseInt(args[5]), bodyBytes = Integer.parseInt(args[6]);
        int attempts = args.length > 7 ? Integer.parseInt(args[7]) : 1;
        java.io.File go = args.length > 8 ? new java.io.File(args[8]) : null;
        var producer = new DefaultMQProducer("replog-lab-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("replog-lab-" + System.nanoTime());
        producer.setSendMsgTimeout(8000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setPollNameServerInterval(1000);   // a new leader's route within a second, not 30
        producer.start();
        try {
            waitForRoute(producer, topic);
            if (go != null) {   // route known: say so, then send once the caller has set the scene (GO file)
                System.out.println("READY");
                System.out.flush();
                while (!go.exists()) Thread.sleep(50);
            }
            for (long seq = first; seq < first + count; seq++) {
                int queue = Integer.parseInt(queues[(int) ((seq - first) % queues.length)]);
                var mq = new MessageQueue(topic, brokerName, queue);
                StringBuilder body = new StringBuilder("seq-" + seq + "-");
                while (body.length() < bodyBytes) body.append('x');
                var msg = new Message(topic, "lab", body.toString().getBytes("UTF-8"));
                msg.setKeys("k" + seq);
                org.apache.rocketmq.client.producer.SendResult result = null;
                for (int attempt = 1; result == null; attempt++) {
                    try {
                        result = producer.send(msg, mq);
                    } catch (Exception e) {
                        if (attempt >= attempts) break;
                        Thread.sleep(1000);   // a send refused by a dead or stepped-down leader appended nothing
                    }
                }
                if (result == null) {
                    System.out.println("FAIL " + seq);
                    continue;
                }
                System.out.println("SENT " + seq + " " + result.getSendStatus() + " " + result.getQueueOffset()
                    + " " + queue + " " + result.getOffsetMsgId());
            }
        } finally {
            producer.shutdown();
        }
    }

    // A topic just created on the broker reaches the name server with the broker's next registration: wait for the
    // route (up to 60 s) instead of failing the first send with "No route info of this topic".
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
