//! The sensor service over loopback: one reading per request, as a CSV record in the
//! observatory's column order, round-robin or by index.

use std::sync::Arc;

use sensors::dataset::{COLUMNS, generate, to_csv_line};
use sensors::service::{self, ReadError, Row, SensorClient, SensorData};

async fn start(rows: usize) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let data = Arc::new(SensorData::generate(rows, 5));
    let task = tokio::spawn(async move { service::serve(listener, data).await.unwrap() });
    (url, task)
}

#[tokio::test]
async fn rows_come_by_index_and_round_robin() {
    let readings = generate(5, 5);
    let (url, _server) = start(5).await;
    let http = reqwest::Client::new();

    let header = http.get(format!("{url}/header")).send().await.unwrap();
    assert_eq!(
        header.headers()["content-type"],
        "text/csv; charset=utf-8; header=present"
    );
    assert_eq!(
        header.text().await.unwrap(),
        format!("{}\n", COLUMNS.join(","))
    );

    for (i, reading) in readings.iter().enumerate() {
        let response = http
            .get(format!("{url}/readings/{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "text/csv; charset=utf-8; header=absent"
        );
        assert_eq!(response.text().await.unwrap(), to_csv_line(reading));
    }
    // Round robin wraps around after the last row.
    for i in 0..12 {
        let response = http.get(format!("{url}/reading")).send().await.unwrap();
        assert_eq!(response.headers()["x-row"], (i % 5).to_string());
        assert_eq!(
            response.text().await.unwrap(),
            to_csv_line(&readings[i % 5])
        );
    }
    let missing = http.get(format!("{url}/readings/5")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.text().await.unwrap(),
        "no row 5: the dataset has 5 rows\n"
    );
}

#[tokio::test]
async fn the_client_parses_readings_and_names_what_went_wrong() {
    let readings = generate(3, 5);
    let (url, _server) = start(3).await;
    let client = SensorClient::new(&format!("{url}/"));
    assert_eq!(client.fetch(Row::At(2)).await.unwrap(), readings[2]);
    assert_eq!(client.fetch(Row::Next).await.unwrap(), readings[0]);
    match client.fetch(Row::At(3)).await.unwrap_err() {
        ReadError::Status { status, url, .. } => {
            assert_eq!(status, 404);
            assert!(url.ends_with("/readings/3"), "{url}");
        }
        other => panic!("{other}"),
    }
    // A port nobody listens on any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let error = SensorClient::new(&closed_url)
        .fetch(Row::At(0))
        .await
        .unwrap_err();
    assert!(matches!(error, ReadError::Unreachable { .. }), "{error}");
    assert!(
        error.to_string().starts_with("cannot reach http://"),
        "{error}"
    );
}
