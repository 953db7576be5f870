//! The accounts service: content negotiation, the article's error body, protobuf bodies that
//! decode to the same data, and payload sizes (issue #3 target: protobuf ≤ 0.55x JSON).

use accounts::model::{Account, AccountList};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use prost::Message;
use tower::ServiceExt;

async fn get(path: &str, accept: Option<&str>) -> (StatusCode, String, Vec<u8>) {
    let mut request = Request::get(path);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = accounts::router()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, content_type, body.to_vec())
}

#[tokio::test]
async fn json_by_default_protobuf_on_request() {
    let (status, content_type, json) = get("/account/1", None).await;
    assert_eq!(
        (status, content_type.as_str()),
        (StatusCode::OK, "application/json")
    );
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["transactions"].as_array().unwrap().len(), 1_001);
    assert_eq!(value["transactions"][0]["id"], 1_000_000);
    assert!(
        value["availableFunds"].is_number(),
        "camelCase fields as in the original"
    );

    for media in accounts::PROTOBUF_TYPES {
        let (status, content_type, body) = get("/account/2", Some(media)).await;
        assert_eq!((status, content_type.as_str()), (StatusCode::OK, *media));
        let account = Account::decode(body.as_slice()).unwrap();
        assert_eq!(account.transactions.len(), 10_001);
        assert_eq!(account.transactions[0].id, 2_000_000);
    }
    let (_, _, body) = get("/accountList", Some("application/x-protobuf")).await;
    assert_eq!(
        AccountList::decode(body.as_slice()).unwrap(),
        accounts::data::accounts()
    );
}

#[tokio::test]
async fn a_bad_id_gets_the_articles_error() {
    for id in ["3", "nope"] {
        let (status, _, body) = get(&format!("/account/{id}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"error" : "Invalid id provided."}"#
        );
    }
}

#[tokio::test]
async fn protobuf_bodies_are_at_most_055_of_json() {
    for path in ["/account/1", "/account/2", "/accountList"] {
        let json = get(path, None).await.2.len();
        let protobuf = get(path, Some("application/x-protobuf")).await.2.len();
        let ratio = protobuf as f64 / json as f64;
        println!("{path}: json {json} bytes, protobuf {protobuf} bytes, ratio {ratio:.3}");
        assert!(ratio <= 0.55, "{path}: protobuf is {ratio:.3} of json");
    }
}

#[test]
fn the_binary_serves_it_as_a_plain_server() {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_accounts"))
        .env("FERRY_LISTEN", "127.0.0.1:0")
        .env_remove("FERRY_ROLE")
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("ferry: listening on http://")
                .map(str::to_owned)
        })
        .expect("the service announces its address");
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /account/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(
        response.ends_with(r#"{"error" : "Invalid id provided."}"#),
        "{response}"
    );
}
