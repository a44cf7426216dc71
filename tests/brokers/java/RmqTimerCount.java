// Counts what a RocketMQ broker delivered to a topic: pulls every queue of TOPIC from its min to its max offset
// (DefaultMQPullConsumer: no consumer group offsets involved) and prints "GOT <seq> <queue> <queueOffset> <msgId>"
// per message whose body is "seq-<n>-...", then "MAX <queue> <maxOffset>" per queue. A timer message the wheel
// delivered is one message in its real topic, so each sequence number's count is how often it was delivered.
// Usage: RmqTimerCount NAMESRV TOPIC BROKER_NAME QUEUES
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.common.message.MessageQueue;

@SuppressWarnings("deprecation")
public class RmqTimerCount {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], brokerName = args[2];
        int queues = Integer.parseInt(args[3]);
        var consumer = new DefaultMQPullConsumer("replog-lab-timer-count-" + System.nanoTime());
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("replog-lab-" + System.nanoTime());
        consumer.start();
        try {
            // a broker just started on a store registers its topics with the name server's next heartbeat
            RmqLab.waitForRoute(() -> !consumer.fetchSubscribeMessageQueues(topic).isEmpty());
            for (int q = 0; q < queues; q++) {
                var mq = new MessageQueue(topic, brokerName, q);
                long offset = consumer.minOffset(mq), max = consumer.maxOffset(mq);
                System.out.println("MAX " + q + " " + max);
                while (offset < max) {
                    var res = consumer.pull(mq, "*", offset, 32);
                    if (res.getPullStatus() != PullStatus.FOUND) {
                        System.out.println("PULL " + q + " " + offset + " " + res.getPullStatus());
                        offset = Math.max(offset + 1, res.getNextBeginOffset());
                        continue;
                    }
                    for (var m : res.getMsgFoundList()) {
                        String body = new String(m.getBody(), "UTF-8");
                        String seq = body.startsWith("seq-") ? body.split("-")[1] : "?";
                        System.out.println("GOT " + seq + " " + q + " " + m.getQueueOffset() + " " + m.getMsgId());
                    }
                    offset = res.getNextBeginOffset();
                }
            }
        } finally {
            consumer.shutdown();
        }
    }
}
