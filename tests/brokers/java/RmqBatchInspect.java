// What a running RocketMQ 5.x broker serves for a BatchConsumeQueue topic, through its admin API (the call behind
// `mqadmin queryCq`): "QUEUE <topic> <queue> <min> <max>" (message offsets), then for EVERY message offset k in
// [min, max) the unit the broker finds for it (BatchConsumeQueue#iterateFrom(k) starts at the unit holding k):
// "UNIT <topic> <queue> <k> <physicOffset> <size> <tagsCode>". Offsets that share a unit are one batch: its base
// offset is the smallest of them and its batch size their count.
// Usage: RmqBatchInspect NAMESRV BROKER_ADDR TOPIC QUEUES
public class RmqBatchInspect {
    public static void main(String[] args) throws Exception {
        var admin = RmqLab.admin(args[0], "bcq");
        try {
            String broker = args[1], topic = args[2];
            for (int q = 0; q < Integer.parseInt(args[3]); q++) {
                var first = admin.queryConsumeQueue(broker, topic, q, 0, 1, null);
                long min = first.getMinQueueIndex(), max = first.getMaxQueueIndex();
                System.out.println("QUEUE " + topic + " " + q + " " + min + " " + max);
                for (long k = min; k < max; k++) {
                    var units = admin.queryConsumeQueue(broker, topic, q, k, 1, null).getQueueData();
                    if (units == null || units.isEmpty()) {
                        System.out.println("GAP " + topic + " " + q + " " + k);
                        continue;
                    }
                    var u = units.get(0);
                    System.out.println("UNIT " + topic + " " + q + " " + k + " " + u.getPhysicOffset() + " "
                        + u.getPhysicSize() + " " + u.getTagsCode());
                }
            }
        } finally {
            admin.shutdown();
        }
    }
}
