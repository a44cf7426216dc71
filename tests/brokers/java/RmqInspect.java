// Reads what a running RocketMQ broker holds through its own admin API (the calls behind `mqadmin brokerStatus` and
// `mqadmin queryCq`): "STAT <key> <value>" for every runtime figure, then per queue "QUEUE <topic> <queue> <min>
// <max>" and one "CQ <topic> <queue> <index> <physicOffset> <size> <tagsCode>" per consume-queue unit it serves.
// `var` keeps the 4.9/5.x package moves out of the source.
// Usage: RmqInspect NAMESRV BROKER_ADDR TOPIC:QUEUES[,TOPIC:QUEUES...]
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class RmqInspect {
    public static void main(String[] args) throws Exception {
        var admin = RmqLab.admin(args[0], "inspect");
        try {
            String broker = args[1];
            var stats = admin.fetchBrokerRuntimeStats(broker);
            for (var e : new java.util.TreeMap<>(stats.getTable()).entrySet()) {
                System.out.println("STAT " + e.getKey() + " " + e.getValue().replace(' ', '_'));
            }
            for (String spec : args.length > 2 && !args[2].isEmpty() ? args[2].split(",") : new String[0]) {
                String topic = spec.split(":")[0];
                int queues = Integer.parseInt(spec.split(":")[1]);
                for (int q = 0; q < queues; q++) dumpQueue(admin, broker, topic, q);
            }
        } finally {
            admin.shutdown();
        }
    }

    // One call serves the units of one mapped file from `index` on: walk file by file to the queue's max.
    static void dumpQueue(DefaultMQAdminExt admin, String broker, String topic, int q) throws Exception {
        long min, max;
        try {
            var first = admin.queryConsumeQueue(broker, topic, q, 0, 1, null);
            min = first.getMinQueueIndex();
            max = first.getMaxQueueIndex();
        } catch (org.apache.rocketmq.client.exception.MQClientException e) {
            // the broker creates a consume queue on its first message: "<q>@<topic> is not exist!"
            System.out.println("NOQUEUE " + topic + " " + q);
            return;
        }
        System.out.println("QUEUE " + topic + " " + q + " " + min + " " + max);
        long index = min;
        while (index < max) {
            var body = admin.queryConsumeQueue(broker, topic, q, index, 100000, null);
            var units = body.getQueueData();
            if (units == null || units.isEmpty()) {
                System.out.println("GAP " + topic + " " + q + " " + index);
                index++;
                continue;
            }
            for (var u : units) {
                System.out.println("CQ " + topic + " " + q + " " + index + " " + u.getPhysicOffset() + " "
                    + u.getPhysicSize() + " " + u.getTagsCode());
                index++;
            }
        }
    }
}
