// Sends message batches (`DefaultMQProducer#send(Collection<Message>, MessageQueue)`: the client wraps them in one
// MessageBatch with a UNIQ_KEY) to one queue of a RocketMQ 5.x topic. On a topic whose queue.type is BatchCQ the
// broker stores each batch as ONE inner-batch commit-log message (SendMessageProcessor#sendBatchMessage sets
// INNER_BATCH_FLAG and INNER_NUM) and one BatchConsumeQueue unit. Bodies "seq-<n>" padded to a size, keys "k<n>".
// One line per batch: "BATCH <queue> <size> <status> <queueOffset> <firstSeq>".
// Usage: RmqBatchSend NAMESRV TOPIC BROKER_NAME QUEUE SIZES(comma list) FIRST BODY_BYTES
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

public class RmqBatchSend {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        int queue = Integer.parseInt(args[3]), bodyBytes = Integer.parseInt(args[6]);
        var producer = RmqLab.producer("replog-lab-batch-producer", args[0], 30000);
        var mq = new MessageQueue(topic, args[2], queue);
        RmqLab.sending(producer, topic, () -> {
            long seq = Long.parseLong(args[5]);
            for (String s : args[4].split(",")) {
                int n = Integer.parseInt(s);
                long first = seq;
                var batch = new java.util.ArrayList<Message>();
                for (; seq < first + n; seq++) batch.add(RmqLab.message(topic, seq, bodyBytes));
                var result = producer.send(batch, mq);
                System.out.println("BATCH " + queue + " " + n + " " + result.getSendStatus() + " "
                    + result.getQueueOffset() + " " + first);
            }
        });
    }
}
