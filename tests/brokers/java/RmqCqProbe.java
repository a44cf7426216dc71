// What a running RocketMQ 5.x broker answers, offset by offset, to the admin API's queryConsumeQueue (the call behind
// `mqadmin queryCq`), tolerating errors: "QUEUE <topic> <queue> <min> <max>", then for every k in [min, max) either
// "UNIT <topic> <queue> <k> <physicOffset> <size> <tagsCode>" (the first unit it returns), "NOUNIT <topic> <queue>
// <k>" (an empty answer) or "ERR <topic> <queue> <k> <first line of the broker's error>".
// Usage: RmqCqProbe NAMESRV BROKER_ADDR TOPIC QUEUES
public class RmqCqProbe {
    public static void main(String[] args) throws Exception {
        var admin = RmqLab.admin(args[0], "cqprobe");
        try {
            String broker = args[1], topic = args[2];
            for (int q = 0; q < Integer.parseInt(args[3]); q++) {
                long min, max;
                try {
                    var first = admin.queryConsumeQueue(broker, topic, q, 0, 0, null);
                    min = first.getMinQueueIndex();
                    max = first.getMaxQueueIndex();
                } catch (Exception e) {
                    System.out.println("ERR " + topic + " " + q + " range " + oneLine(e));
                    continue;
                }
                System.out.println("QUEUE " + topic + " " + q + " " + min + " " + max);
                for (long k = min; k < max; k++) {
                    try {
                        var units = admin.queryConsumeQueue(broker, topic, q, k, 1, null).getQueueData();
                        if (units == null || units.isEmpty()) {
                            System.out.println("NOUNIT " + topic + " " + q + " " + k);
                            continue;
                        }
                        var u = units.get(0);
                        System.out.println("UNIT " + topic + " " + q + " " + k + " " + u.getPhysicOffset() + " "
                            + u.getPhysicSize() + " " + u.getTagsCode());
                    } catch (Exception e) {
                        System.out.println("ERR " + topic + " " + q + " " + k + " " + oneLine(e));
                    }
                }
            }
        } finally {
            admin.shutdown();
        }
    }

    static String oneLine(Exception e) {
        String m = String.valueOf(e.getMessage());
        int cut = m.indexOf('\n');
        return (cut >= 0 ? m.substring(0, cut) : m).replace(' ', '_');
    }
}
