// A consumer group's offsets as ONE broker holds them, asked at that broker's own address (the admin API's
// examineConsumeStats(brokerAddr, group, topic, timeout): GET_CONSUME_STATS, answered by
// AdminBrokerProcessor#getConsumeStats from that broker's own ConsumerOffsetManager and store, tag
// rocketmq-all-5.3.3), so a slave answers with its own table, not its master's.
// One line per queue: "OWN <topic> <queue> <brokerOffset> <consumerOffset>".
// Usage: RmqBrokerOffsets NAMESRV BROKER_ADDR GROUP TOPIC
public class RmqBrokerOffsets {
    public static void main(String[] args) throws Exception {
        var admin = RmqLab.admin(args[0], "own-offsets");
        try {
            var stats = admin.examineConsumeStats(args[1], args[2], args[3], 30000);
            RmqLab.printOffsets("OWN", stats.getOffsetTable(), w -> w.getBrokerOffset(),
                                w -> w.getConsumerOffset());
        } finally {
            admin.shutdown();
        }
    }
}
