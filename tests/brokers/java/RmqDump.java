// Reads every message a running RocketMQ broker serves in the given queues through the consumer API (a pull
// consumer, no group offsets committed): one line "MSG <topic> <queue> <queueOffset> <commitLogOffset> <seq>" per
// message, the sequence number parsed from RmqSend's body "seq-<n>-...". `var` keeps the 4.9/5.x package moves out.
// Usage: RmqDump NAMESRV BROKER_NAME TOPIC:QUEUES
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.common.message.MessageQueue;

public class RmqDump {
    public static void main(String[] args) throws Exception {
        var consumer = new DefaultMQPullConsumer("replog-lab-dump");
        consumer.setNamesrvAddr(args[0]);
        consumer.setInstanceName("replog-lab-dump-" + System.nanoTime());
        consumer.start();
        try {
            String topic = args[2].split(":")[0];
            int queues = Integer.parseInt(args[2].split(":")[1]);
            for (int q = 0; q < queues; q++) dump(consumer, new MessageQueue(topic, args[1], q));
        } finally {
            consumer.shutdown();
        }
    }

    static void dump(DefaultMQPullConsumer consumer, MessageQueue mq) throws Exception {
        long offset = consumer.minOffset(mq), max = consumer.maxOffset(mq);
        System.out.println("RANGE " + mq.getTopic() + " " + mq.getQueueId() + " " + offset + " " + max);
        while (offset < max) {
            var result = consumer.pull(mq, "*", offset, 32);
            if (result.getPullStatus() != PullStatus.FOUND) {
                System.out.println("STATUS " + mq.getQueueId() + " " + offset + " " + result.getPullStatus());
                if (result.getNextBeginOffset() <= offset) break;
                offset = result.getNextBeginOffset();
                continue;
            }
            for (var m : result.getMsgFoundList()) {
                String body = new String(m.getBody(), "UTF-8");
                String seq = body.startsWith("seq-") ? body.split("-")[1] : "-1";
                System.out.println("MSG " + mq.getTopic() + " " + mq.getQueueId() + " " + m.getQueueOffset() + " "
                    + m.getCommitLogOffset() + " " + seq);
            }
            offset = result.getNextBeginOffset();
        }
    }
}
