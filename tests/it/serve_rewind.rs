//! `odek serve`'s checkpoint routes over real HTTP: the list, a dry run that writes nothing,
//! a file changed by hand that stops a rewind (409) until `force`, the `rewound` event on the
//! live stream, and the routes' JSON errors under the token.

use serde_json::json;

use crate::support::serve::{Served, SseReader, send};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoint_routes_list_preview_and_rewind_under_the_token() {
    let sb = Sandbox::new();
    let a = sb.work.join("a.txt");
    std::fs::write(&a, "one\n").expect("a");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "patch",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        tools(&[(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )]),
        text("Done."),
    ])
    .await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served
        .prompt_completed(json!({"content": "edit the files"}))
        .await;
    let id = started["session_id"].as_str().expect("session").to_string();
    let list_path = format!("/api/sessions/{id}/checkpoints");
    let rewind_path = format!("/api/sessions/{id}/rewind");

    let bare = send(served.bare(reqwest::Method::GET, &list_path)).await;
    assert_eq!(bare.status, 401, "{}", bare.text);
    let bare = send(
        served
            .bare(reqwest::Method::POST, &rewind_path)
            .json(&json!({"to": 1})),
    )
    .await;
    assert_eq!(bare.status, 401, "{}", bare.text);

    let list = served.get(&list_path).await;
    assert_eq!(list.status, 200, "{}", list.text);
    let checkpoints = list.json["checkpoints"].as_array().expect("list");
    assert_eq!(checkpoints.len(), 2, "{}", list.text);
    assert_eq!(checkpoints[0]["tool"], "patch");
    assert_eq!(checkpoints[0]["turn"], 1);
    assert_eq!(checkpoints[0]["files"][0]["change"], "changed");
    assert_eq!(checkpoints[1]["files"][0]["change"], "added");
    assert!(!list.text.contains("one\\n"), "no contents: {}", list.text);

    // A dry run says what would be done and writes nothing.
    let preview = served
        .post(&rewind_path, json!({"turn": 1, "dry_run": true}))
        .await;
    assert_eq!(preview.status, 200, "{}", preview.text);
    assert_eq!(preview.json["done"], false);
    assert_eq!(preview.json["to"], 1);
    let files: Vec<String> = preview.json["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["change"].as_str().unwrap_or_default(),
                f["path"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(files, ["restore a.txt", "remove new.txt"]);
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "two\n");

    // A file changed by hand: shown before anything is written, and a rewind stops on it.
    std::fs::write(&a, "mine\n").expect("edit");
    let preview = served
        .post(&rewind_path, json!({"to": 1, "dry_run": true}))
        .await;
    assert_eq!(
        preview.json["conflicts"].as_array().map(Vec::len),
        Some(1),
        "{}",
        preview.text
    );
    let refused = served.post(&rewind_path, json!({"to": 1})).await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert!(
        refused.json["error"]
            .as_str()
            .unwrap_or_default()
            .contains("a.txt"),
        "{}",
        refused.text
    );
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "mine\n");
    assert!(sb.work.join("new.txt").exists(), "nothing written");

    let mut stream = SseReader::open(&served, "", None).await;
    let done = served
        .post(&rewind_path, json!({"to": 1, "force": true}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json["done"], true);
    assert_eq!(done.json["checkpoint"], 3);
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "one\n");
    assert!(!sb.work.join("new.txt").exists());
    let frames = stream.until("rewound").await;
    let rewound = &frames.last().expect("frame").data;
    let data = if rewound["data"].is_object() {
        &rewound["data"]
    } else {
        rewound
    };
    assert_eq!(data["to"], 1, "{rewound}");
    assert_eq!(data["checkpoint"], 3, "{rewound}");
    assert_eq!(data["forced"], true, "{rewound}");

    // The rewind is a checkpoint; the errors are JSON.
    let list = served.get(&list_path).await;
    assert_eq!(
        list.json["checkpoints"][2]["rewound_to"], 1,
        "{}",
        list.text
    );
    for (body, status) in [
        (json!({"to": 99}), 400),
        (json!({}), 400),
        (json!({"to": 1, "turn": 1}), 400),
        (json!({"to": 1, "nope": true}), 400),
        (json!({"turn": 5}), 400),
    ] {
        let answer = served.post(&rewind_path, body.clone()).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.text);
        assert!(answer.json["error"].is_string(), "{body}: {}", answer.text);
    }
    // The conversation: a fork before turn 1 keeps no turn; the files are left alone.
    let forked = served
        .post(
            &rewind_path,
            json!({"turn": 1, "files": false, "conversation": true}),
        )
        .await;
    assert_eq!(forked.status, 200, "{}", forked.text);
    assert_eq!(forked.json["fork_at"], 0, "{}", forked.text);
    assert!(forked.json.get("to").is_none(), "{}", forked.text);
    let new_id = forked.json["forked"].as_str().expect("forked").to_string();
    let new = served.get(&format!("/api/sessions/{new_id}")).await;
    assert_eq!(new.status, 200, "{}", new.text);
    assert_eq!(new.json["turns"], 0, "{}", new.text);
    let nothing = served
        .post(&rewind_path, json!({"turn": 1, "files": false}))
        .await;
    assert_eq!(nothing.status, 400, "{}", nothing.text);
    let missing = served
        .get("/api/sessions/20990101-00000000000000000000000000000000/checkpoints")
        .await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    let odd = served.get("/api/sessions/..%2Fx/checkpoints").await;
    assert_eq!(odd.status, 404, "{}", odd.text);
}

/// Issue 60, H1 over the API: a folder the model's file was written into is now a link to a
/// folder outside the tree (what `mv sub old && ln -s $HOME sub` leaves). Neither the preview
/// nor the rewind goes through it: the file is reported as not covered, and the file of the
/// same content outside stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_rewind_never_removes_through_a_link() {
    let sb = Sandbox::new();
    let home = sb.dir.path().join("fake-home");
    std::fs::create_dir_all(&home).expect("fake home");
    std::fs::write(home.join("notes.txt"), "the user's notes\n").expect("notes");
    let server = ScriptedServer::start(vec![
        tools(&[(
            "write_file",
            json!({"path": "sub/notes.txt", "content": "the user's notes\n"}),
        )]),
        text("Done."),
    ])
    .await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served
        .prompt_completed(json!({"content": "copy the notes"}))
        .await;
    let id = started["session_id"].as_str().expect("session").to_string();
    let sub = sb.work.join("sub");
    std::fs::rename(&sub, sb.work.join("old")).expect("mv");
    std::os::unix::fs::symlink(&home, &sub).expect("ln -s");

    let rewind_path = format!("/api/sessions/{id}/rewind");
    for body in [json!({"to": 1, "dry_run": true}), json!({"to": 1})] {
        let answer = served.post(&rewind_path, body.clone()).await;
        assert_eq!(answer.status, 200, "{body}: {}", answer.text);
        assert_eq!(answer.json["files"], json!([]), "{body}: {}", answer.text);
        let not_covered = answer.json["not_covered"].to_string();
        assert!(
            not_covered.contains("sub/notes.txt") && not_covered.contains("symbolic link"),
            "{body}: {}",
            answer.text
        );
        assert_eq!(
            std::fs::read_to_string(home.join("notes.txt")).expect("still there"),
            "the user's notes\n",
            "{body}"
        );
    }
}
