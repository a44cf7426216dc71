// POP consumption through the broker's own remoting API (MQClientAPIImpl#popMessageAsync / #ackMessageAsync, what
// DefaultMQPushConsumer does in POP mode), for a RocketMQ 5.x broker.
//   pop:   one POP request per size in SIZES on QUEUE (each records one checkpoint), then an ACK of every popped
//          message whose sequence number is in ACK_SEQS. Lines "POP <seq> <queueOffset> <popTime> <invisibleTime>"
//          and "ACK <seq> <status>". ACK_MODE "batch" acks them in one BATCH_ACK_MESSAGE request
//          (MQClientAPIImpl#batchAckMessageAsync: the broker writes one "bAck" revive message per checkpoint).
//   drain: POP requests on every queue (retry queues included) for SECONDS, acking all it gets: "GOT <seq> <topic>
//          <queueOffset>" per message the broker (re-)delivers.
// Usage: RmqPop pop   NAMESRV ADDR BROKER_NAME TOPIC GROUP QUEUE SIZES INVISIBLE_MS ACK_SEQS [ACK_MODE]
//        java -cp CP RmqPop.java drain NAMESRV ADDR BROKER_NAME TOPIC GROUP SECONDS INVISIBLE_MS
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;

public class RmqPop {
    static MQClientInstance client;
    static String addr, brokerName, topic, group;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        var cc = new ClientConfig();
        cc.setNamesrvAddr(args[1]);
        cc.setInstanceName("replog-lab-pop-" + System.nanoTime());
        addr = args[2]; brokerName = args[3]; topic = args[4]; group = args[5];
        client = MQClientManager.getInstance().getOrCreateMQClientInstance(cc);
        client.start();
        try {
            if (mode.equals("pop")) {
                int queue = Integer.parseInt(args[6]);
                long invisible = Long.parseLong(args[8]);
                var ackSeqs = new java.util.HashSet<Long>();
                for (String s : args.length > 9 && !args[9].isEmpty() ? args[9].split(",") : new String[0]) {
                    ackSeqs.add(Long.parseLong(s));
                }
                var toAck = new java.util.ArrayList<MessageExt>();
                for (String size : args[7].split(",")) {
                    PopResult r = pop(queue, Integer.parseInt(size), invisible);
                    for (MessageExt m : r.getMsgFoundList() == null ? java.util.List.<MessageExt>of() : r.getMsgFoundList()) {
                        long seq = seq(m);
                        System.out.println("POP " + seq + " " + m.getQueueOffset() + " " + r.getPopTime() + " "
                            + r.getInvisibleTime());
                        if (ackSeqs.contains(seq)) toAck.add(m);
                    }
                }
                if (args.length > 10 && args[10].equals("batch")) {
                    AckResult r = batchAck(toAck);
                    for (MessageExt m : toAck) System.out.println("ACK " + seq(m) + " " + r.getStatus());
                } else {
                    for (MessageExt m : toAck) System.out.println("ACK " + seq(m) + " " + ack(m).getStatus());
                }
            } else {
                long end = System.currentTimeMillis() + Long.parseLong(args[6]) * 1000;
                long invisible = Long.parseLong(args[7]);
                while (System.currentTimeMillis() < end) {
                    PopResult r = pop(-1, 32, invisible);
                    var found = r.getMsgFoundList();
                    if (found == null || found.isEmpty()) { Thread.sleep(500); continue; }
                    for (MessageExt m : found) {
                        System.out.println("GOT " + seq(m) + " " + m.getTopic() + " " + m.getQueueOffset() + " "
                            + ack(m).getStatus());
                    }
                }
            }
        } finally {
            client.shutdown();
        }
    }

    static long seq(MessageExt m) throws Exception {
        String body = new String(m.getBody(), "UTF-8");
        return Long.parseLong(body.split("-")[1]);
    }

    static PopResult pop(int queue, int max, long invisible) throws Exception {
        var h = new PopMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(queue);
        h.setMaxMsgNums(max);
        h.setInvisibleTime(invisible);
        h.setPollTime(1000);
        h.setBornTime(System.currentTimeMillis());
        h.setInitMode(0);                    // ConsumeInitMode.MIN
        h.setExpType("TAG");
        h.setExp("*");
        h.setBrokerName(brokerName);
        var f = new CompletableFuture<PopResult>();
        client.getMQClientAPIImpl().popMessageAsync(brokerName, addr, h, 10000, new PopCallback() {
            public void onSuccess(PopResult r) { f.complete(r); }
            public void onException(Throwable e) { f.completeExceptionally(e); }
        });
        return f.get(30, TimeUnit.SECONDS);
    }

    static AckResult ack(MessageExt m) throws Exception {
        String extra = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] parts = ExtraInfoUtil.split(extra);
        var h = new AckMessageRequestHeader();
        h.setTopic(ExtraInfoUtil.getRealTopic(parts, topic, group));
        h.setQueueId(ExtraInfoUtil.getQueueId(parts));
        h.setOffset(ExtraInfoUtil.getQueueOffset(parts));
        h.setConsumerGroup(group);
        h.setExtraInfo(extra);
        h.setBrokerName(brokerName);
        var f = new CompletableFuture<AckResult>();
        client.getMQClientAPIImpl().ackMessageAsync(addr, 10000, new AckCallback() {
            public void onSuccess(AckResult r) { f.complete(r); }
            public void onException(Throwable e) { f.completeExceptionally(e); }
        }, h);
        return f.get(30, TimeUnit.SECONDS);
    }

    static AckResult batchAck(java.util.List<MessageExt> msgs) throws Exception {
        var extra = new java.util.ArrayList<String>();
        for (MessageExt m : msgs) extra.add(m.getProperty(MessageConst.PROPERTY_POP_CK));
        var f = new CompletableFuture<AckResult>();
        client.getMQClientAPIImpl().batchAckMessageAsync(addr, 10000, new AckCallback() {
            public void onSuccess(AckResult r) { f.complete(r); }
            public void onException(Throwable e) { f.completeExceptionally(e); }
        }, topic, group, extra);
        return f.get(30, TimeUnit.SECONDS);
    }
}
