// Consumes messages of a RocketMQ topic with a consumer group and commits the group's offsets to the broker, then
// prints what the broker reports for the group (the call behind `mqadmin consumerProgress`).
// consume: pulls `count` messages from each listed queue (from the group's committed offset, 0 the first time),
//          commits the next offset through the broker's updateConsumerOffset request (synchronously) and prints
//          "COMMIT <topic> <queue> <offset>".
// progress: "PROGRESS <topic> <queue> <brokerOffset> <consumerOffset>" per queue of the group (examineConsumeStats).
// `var` keeps the 4.9/5.x package moves out of the source.
// Usage: RmqCommit consume NAMESRV GROUP TOPIC BROKER_NAME QUEUES COUNT
//        java -cp CP RmqCommit.java progress NAMESRV GROUP
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.common.message.MessageQueue;

public class RmqCommit {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4], args[5].split(","), Integer.parseInt(args[6]));
        } else {
            progress(args[1], args[2]);
        }
    }

    static void consume(String namesrv, String group, String topic, String brokerName, String[] queues, int count)
            throws Exception {
        var consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("replog-lab-commit-" + System.nanoTime());
        consumer.start();
        try {
            for (String q : queues) {
                var mq = new MessageQueue(topic, brokerName, Integer.parseInt(q));
                long offset = Math.max(consumer.fetchConsumeOffset(mq, true), 0);
                int got = 0;
                while (got < count) {
                    var result = consumer.pull(mq, "*", offset, count - got, 30000);
                    if (result.getPullStatus() != PullStatus.FOUND) break;
                    got += result.getMsgFoundList().size();
                    offset = result.getNextBeginOffset();
                }
                consumer.updateConsumeOffset(mq, offset);
                var store = (RemoteBrokerOffsetStore) consumer.getOffsetStore();
                store.updateConsumeOffsetToBroker(mq, offset, false);
                System.out.println("COMMIT " + topic + " " + q + " " + offset);
            }
        } finally {
            consumer.shutdown();
        }
    }

    static void progress(String namesrv, String group) throws Exception {
        var admin = RmqLab.admin(namesrv, "progress");
        try {
            var stats = admin.examineConsumeStats(group);
            RmqLab.printOffsets("PROGRESS", stats.getOffsetTable(), w -> w.getBrokerOffset(),
                                w -> w.getConsumerOffset());
        } finally {
            admin.shutdown();
        }
    }
}
