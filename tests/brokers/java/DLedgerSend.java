// DLedgerSend: RmqSend that goes on after a failed send (a DLedger leader without its quorum answers each send with an
// error after maxWaitAckTimeMs while the entry stays in its log): "FAIL <seq>" for those, "SENT <seq> <status>
// <queueOffset> <queue> <offsetMsgId>" for the others. ATTEMPTS sends per message at most (a second apart); with
// GO_FILE it prints "READY" once the route is known and sends only once that file exists.
// Usage: DLedgerSend NAMESRV TOPIC BROKER_NAME QUEUE FIRST COUNT BODY_BYTES [ATTEMPTS [GO_FILE]]
public class DLedgerSend {
    public static void main(String[] args) throws Exception {
        var a = RmqLab.SendArgs.parse(args);
        int attempts = args.length > 7 ? Integer.parseInt(args[7]) : 1;
        java.io.File go = args.length > 8 ? new java.io.File(args[8]) : null;
        var producer = RmqLab.producer("replog-lab-producer", a.namesrv(), 8000);
        producer.setPollNameServerInterval(1000);   // a new leader's route within a second, not 30
        RmqLab.sending(producer, a.topic(), () -> {
            if (go != null) {   // route known: say so, then send once the caller has set the scene (GO file)
                System.out.println("READY");
                System.out.flush();
                while (!go.exists()) Thread.sleep(50);
            }
            for (long seq = a.first(); seq < a.first() + a.count(); seq++) {
                var msg = a.message(seq);
                org.apache.rocketmq.client.producer.SendResult result = null;
                for (int attempt = 1; result == null; attempt++) {
                    try {
                        result = producer.send(msg, a.messageQueue(seq));
                    } catch (Exception e) {
                        if (attempt >= attempts) break;
                        Thread.sleep(1000);   // a send refused by a dead or stepped-down leader appended nothing
                    }
                }
                System.out.println(result == null ? "FAIL " + seq : RmqLab.sent(seq, result, a.queue(seq)));
            }
        });
    }
}
