// Sends message batches (`DefaultMQProducer#send(Collection<Message>, MessageQueue)`: the client wraps them in one
// MessageBatch with a UNIQ_KEY) to one queue of a RocketMQ 5.x topic. On a topic whose queue.type is BatchCQ the
// broker stores each batch as ONE inner-batch commit-log message (SendMessageProcessor#sendBatchMessage sets
// INNER_BATCH_FLAG and INNER_NUM) and one BatchConsumeQueue unit. Bodies "seq-<n>" padded to a size, keys "k<n>".
// One line per batch: "BATCH <queue> <size> <status> <queueOffset> <firstSeq>".
// Usage: java -cp CP RmqBatchSend.java NAMESRV TOPIC BROKER_NAME QUEUE SIZES(comma list) FIRST BODY_BYTES
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

public class RmqBatchSend {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], brokerName = args[2];
        int queue = Integer.parseInt(args[3]);
        String[] sizes = args[4].split(",");
        long seq = Long.parseLong(args[5]);
        int bodyBytes = Integer.parseInt(args[6]);
        var producer = new DefaultMQProducer("replog-lab-batch-producer");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("replog-lab-" + System.nanoTime());
        producer.setSendMsgTimeout(30000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        try {
            waitForRoute(producer, topic);
            var mq = new MessageQueue(topic, brokerName, queue);
            for (String s : sizes) {
                int n = Integer.parseInt(s);
                long first = seq;
                var batch = new java.util.ArrayList<Message>();
                for (int i = 0; i < n; i++, seq++) {
                    StringBuilder body = new StringBuilder("seq-" + seq + "-");
                    while (body.length() < bodyBytes) body.append('x');
                    var msg = new Message(topic, "lab", body.toString().getBytes("UTF-8"));
                    msg.setKeys("k" + seq);
                    batch.add(msg);
                }
                var result = producer.send(batch, mq);
                System.out.println("BATCH " + queue + " " + n + " " + result.getSendStatus() + " "
                    + result.getQueueOffset() + " " + first);
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
