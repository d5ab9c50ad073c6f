use std::io::{PipeReader, PipeWriter, Read, Write};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Cdp, CdpEvent, ENDED};

/// The browser's side of a connection: commands come in on `commands`, messages go out on
/// `messages`.
struct FakeBrowser {
    commands: PipeReader,
    messages: PipeWriter,
}

fn connect(timeout: Duration) -> (Arc<Cdp>, FakeBrowser) {
    let (commands, command_writer) = std::io::pipe().expect("pipe");
    let (message_reader, messages) = std::io::pipe().expect("pipe");
    let cdp = Cdp::new(command_writer, message_reader, timeout).expect("cdp");
    (cdp, FakeBrowser { commands, messages })
}

impl FakeBrowser {
    /// The next command odek wrote, up to its NUL.
    fn command(&mut self) -> Value {
        let mut bytes = Vec::new();
        let mut byte = [0u8];
        loop {
            self.commands.read_exact(&mut byte).expect("read");
            if byte[0] == 0 {
                return serde_json::from_slice(&bytes).expect("json");
            }
            bytes.push(byte[0]);
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.messages.write_all(bytes).expect("write");
    }
}

fn events(cdp: &Cdp) -> mpsc::Receiver<CdpEvent> {
    let (sender, receiver) = mpsc::channel();
    let sender = std::sync::Mutex::new(sender);
    cdp.on_event(Arc::new(move |_: &Arc<Cdp>, event: CdpEvent| {
        let _ = sender.lock().expect("lock").send(event);
    }));
    receiver
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_split_across_reads_and_several_in_one_read_each_arrive_whole() {
    let (cdp, mut browser) = connect(WAIT);
    let received = events(&cdp);
    browser.send(br#"{"method":"Page.loadEventFired","params":{"timestamp":1.5}}"#);
    browser.send(b"\0{\"method\":\"Runtime.consoleAPI");
    browser.send(b"Called\",\"params\":{\"type\":\"error\"},\"sessionId\":\"S1\"}\0not json\0");
    browser.send(b"{\"method\":\"A.b\"}\0{\"method\":\"C.d\",\"params\":{}}\0");
    let first = received.recv_timeout(WAIT).expect("first");
    assert_eq!(first.method, "Page.loadEventFired");
    assert_eq!(first.params, json!({"timestamp": 1.5}));
    assert_eq!(first.session, None);
    let second = received.recv_timeout(WAIT).expect("second");
    assert_eq!(second.method, "Runtime.consoleAPICalled");
    assert_eq!(second.params, json!({"type": "error"}));
    assert_eq!(second.session.as_deref(), Some("S1"));
    // The line that is not JSON is skipped; the two in one read both come, in order.
    let third = received.recv_timeout(WAIT).expect("third");
    assert_eq!((third.method.as_str(), third.params), ("A.b", Value::Null));
    assert_eq!(received.recv_timeout(WAIT).expect("fourth").method, "C.d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_reply_completes_its_own_call_and_the_session_goes_top_level() {
    let (cdp, mut browser) = connect(WAIT);
    let browser = std::thread::spawn(move || {
        let first = browser.command();
        let second = browser.command();
        // Answered in the other order, the second split in two reads.
        let reply = format!(r#"{{"id":{},"result":{{"n":2}}}}"#, second["id"]);
        let (head, tail) = reply.split_at(7);
        browser.send(head.as_bytes());
        browser.send(format!("{tail}\0").as_bytes());
        let reply = format!("{{\"id\":{},\"result\":{{\"n\":1}}}}\0", first["id"]);
        browser.send(reply.as_bytes());
        (first, second, browser)
    });
    let one = cdp.call(None, "Browser.getVersion", json!({}));
    let two = cdp.call(Some("S9"), "Runtime.evaluate", json!({"expression": "1"}));
    let (one, two) = tokio::join!(one, two);
    assert_eq!(one.expect("one"), json!({"n": 1}));
    assert_eq!(two.expect("two"), json!({"n": 2}));
    let (first, second, _browser) = browser.join().expect("browser");
    assert_eq!(first["method"], "Browser.getVersion");
    assert!(first.get("sessionId").is_none(), "{first}");
    assert_eq!(second["sessionId"], "S9");
    assert_eq!(second["params"], json!({"expression": "1"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_reply_is_the_calls_error_with_the_browsers_message() {
    let (cdp, mut browser) = connect(WAIT);
    let browser = std::thread::spawn(move || {
        let id = browser.command()["id"].clone();
        let reply = json!({"id": id, "error": {"code": -32000, "message": "No node with given id found", "data": "ref 7"}});
        browser.send(format!("{reply}\0").as_bytes());
        browser
    });
    let error = cdp
        .call(Some("S"), "DOM.focus", json!({"nodeId": 7}))
        .await
        .expect_err("refused");
    assert_eq!(
        error.0,
        "browser: DOM.focus: No node with given id found (ref 7)"
    );
    let _browser = browser.join();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browsers_end_fails_the_waiting_call_and_every_later_one() {
    let (cdp, mut browser) = connect(WAIT);
    let browser = std::thread::spawn(move || {
        let _ = browser.command();
        drop(browser.messages);
        browser.commands
    });
    let waiting = cdp
        .call(None, "Page.navigate", json!({"url": "about:blank"}))
        .await;
    assert_eq!(waiting.expect_err("ended").0, ENDED);
    let _commands = browser.join();
    let later = cdp.call(None, "Browser.getVersion", json!({})).await;
    assert_eq!(later.expect_err("ended").0, ENDED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_an_answer_fails_at_the_time_cap_and_the_late_reply_is_dropped() {
    let (cdp, mut browser) = connect(Duration::from_millis(50));
    let received = events(&cdp);
    let error = cdp
        .call(None, "Page.navigate", json!({}))
        .await
        .expect_err("no answer");
    assert!(
        error.0.contains("Page.navigate had no answer"),
        "{}",
        error.0
    );
    let id = browser.command()["id"].clone();
    browser.send(format!("{{\"id\":{id},\"result\":{{}}}}\0{{\"method\":\"X.y\"}}\0").as_bytes());
    // The late reply went nowhere; the event after it still arrives.
    assert_eq!(received.recv_timeout(WAIT).expect("event").method, "X.y");
}
