//! Frames between the local platform and its workers, over a Unix socket on the worker's fd 3
//! (stdout and stderr stay free for the functions' own output).
//!
//! A frame is `u32 length (LE) | u8 tag | body`. Both directions use the same frames: a request
//! from the host is an invocation, a request from a worker is a nested invocation made by a
//! function; a response answers the request with the same id.
//!
//! ```text
//! request   id: u64 | envelope length: u32 | envelope (binary codec) | arguments
//! response  id: u64 | 0 | output          or   id: u64 | 1 | error (json)
//! hello     pid: u32 | memory_mb: u32 (the largest `memory_mb` of the worker's functions; 0: none)
//! retire    reason (utf-8)
//! fetch     id: u64 | blob id: [u8; 32]
//! refuse    error (json)
//! released  id: u64
//! busy      every worker busy: u8 (1) or not (0)
//! ```
//!
//! A process started as a worker whose `main` did not hand over to ferry sends `refuse` instead
//! of `hello`: the platform fails its work with that error and starts no more workers.
//!
//! A worker sends `released` when the body of a chained flow's stage has ended and what is left
//! is forwarding to the next stage: the invocation holds none of the function's capacity any
//! more, so the platform may send the worker more of the function's work (the later stage
//! included) while the stage waits for the rest of the flow.
//!
//! The platform sends `busy` to every worker when whether all of them are busy changes (each
//! holds work): while they are, a worker runs a nested invocation itself when it has a free slot
//! for it, instead of sending it to the platform, which would only give it to a busy worker or
//! start a process competing for the same cores; once one is idle again, nested invocations go
//! to the platform, which places them there.
//!
//! A worker sends `fetch` for a shared value's blob that an envelope lists and its cache lacks;
//! the platform answers with a response of the same id whose output is the blob (codec tag and
//! bytes), or a `missing_shared` error. Fetches and nested requests share the worker's ids.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use crate::shared::BlobId;
use crate::wire::Envelope;
use crate::{Codec, Error, ErrorKind, Result};

const TAG_REQUEST: u8 = 1;
const TAG_RESPONSE: u8 = 2;
const TAG_HELLO: u8 = 3;
const TAG_RETIRE: u8 = 4;
const TAG_FETCH: u8 = 5;
const TAG_REFUSE: u8 = 6;
const TAG_RELEASED: u8 = 7;
const TAG_BUSY: u8 = 8;

/// Largest frame either side accepts: arguments or results above it are refused before sending.
pub(crate) const MAX_FRAME: usize = 256 << 20;

/// Largest encoded envelope of a request: metadata and a flow route, never near this.
const MAX_ENVELOPE: usize = 1 << 20;

#[derive(Debug)]
pub(crate) enum Frame {
    Request {
        id: u64,
        envelope: Envelope,
        payload: Bytes,
    },
    Response {
        id: u64,
        result: Result<Bytes>,
    },
    Hello {
        pid: u32,
        /// The largest `memory_mb` of the worker's own functions: the size of the worker, as a
        /// container sized for all of them would be.
        memory_mb: Option<u32>,
    },
    Retire {
        reason: String,
    },
    Fetch {
        id: u64,
        blob: BlobId,
    },
    Refuse {
        error: Error,
    },
    Released {
        id: u64,
    },
    Busy {
        all: bool,
    },
}

fn frame(tag: u8, capacity: usize, body: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::with_capacity(5 + capacity);
    buf.put_u32_le(0);
    buf.put_u8(tag);
    body(&mut buf);
    let len = u32::try_from(buf.len() - 4).unwrap_or(u32::MAX);
    buf[..4].copy_from_slice(&len.to_le_bytes());
    buf.freeze()
}

fn check_size(size: usize) -> Result<()> {
    if size > MAX_FRAME {
        return Err(Error::new(ErrorKind::PayloadTooLarge {
            size: size as u64,
            limit: MAX_FRAME as u64,
        }));
    }
    Ok(())
}

pub(crate) fn request(id: u64, envelope: &Envelope, payload: &[u8]) -> Result<Bytes> {
    check_size(payload.len())?;
    let header = Codec::Binary.encode(envelope)?;
    if header.len() > MAX_ENVELOPE {
        return Err(Error::new(ErrorKind::PayloadTooLarge {
            size: header.len() as u64,
            limit: MAX_ENVELOPE as u64,
        }));
    }
    Ok(frame(
        TAG_REQUEST,
        12 + header.len() + payload.len(),
        |buf| {
            buf.put_u64_le(id);
            buf.put_u32_le(header.len() as u32);
            buf.put_slice(&header);
            buf.put_slice(payload);
        },
    ))
}

pub(crate) fn response(id: u64, result: &Result<impl AsRef<[u8]>>) -> Bytes {
    let oversized = match result {
        Ok(output) => check_size(output.as_ref().len()).err(),
        Err(_) => None,
    };
    match (result, oversized.as_ref()) {
        (Ok(output), None) => frame(TAG_RESPONSE, 9 + output.as_ref().len(), |buf| {
            buf.put_u64_le(id);
            buf.put_u8(0);
            buf.put_slice(output.as_ref());
        }),
        (Err(error), _) | (_, Some(error)) => {
            let mut body = serde_json::to_vec(error).unwrap_or_default();
            if body.len() > MAX_FRAME {
                // An error too large to send (a user error with a huge message) is reported as
                // what it is, with its function and invocation; the reader would drop the frame.
                let mut too_large = Error::new(ErrorKind::PayloadTooLarge {
                    size: body.len() as u64,
                    limit: MAX_FRAME as u64,
                });
                if let Some(function) = error.function() {
                    too_large = too_large.in_function(function);
                }
                if let Some(invocation) = error.invocation() {
                    too_large = too_large.in_invocation(invocation);
                }
                body = serde_json::to_vec(&too_large).unwrap_or_default();
            }
            frame(TAG_RESPONSE, 9 + body.len(), |buf| {
                buf.put_u64_le(id);
                buf.put_u8(1);
                buf.put_slice(&body);
            })
        }
    }
}

pub(crate) fn hello(pid: u32, memory_mb: Option<u32>) -> Bytes {
    frame(TAG_HELLO, 8, |buf| {
        buf.put_u32_le(pid);
        buf.put_u32_le(memory_mb.unwrap_or(0));
    })
}

pub(crate) fn retire(reason: &str) -> Bytes {
    frame(TAG_RETIRE, reason.len(), |buf| {
        buf.put_slice(reason.as_bytes())
    })
}

pub(crate) fn refuse(error: &Error) -> Bytes {
    let body = serde_json::to_vec(error).unwrap_or_default();
    frame(TAG_REFUSE, body.len(), |buf| buf.put_slice(&body))
}

pub(crate) fn released(id: u64) -> Bytes {
    frame(TAG_RELEASED, 8, |buf| buf.put_u64_le(id))
}

pub(crate) fn busy(all: bool) -> Bytes {
    frame(TAG_BUSY, 1, |buf| buf.put_u8(u8::from(all)))
}

pub(crate) fn fetch(id: u64, blob: &BlobId) -> Bytes {
    frame(TAG_FETCH, 40, |buf| {
        buf.put_u64_le(id);
        buf.put_slice(blob.as_bytes());
    })
}

/// Parses a frame read by [`read_frame`] (tag and body, without the length).
pub(crate) fn decode(mut frame: Bytes) -> Result<Frame> {
    let truncated = || Error::protocol("truncated frame from the local platform");
    if frame.is_empty() {
        return Err(truncated());
    }
    let tag = frame.get_u8();
    match tag {
        TAG_REQUEST => {
            if frame.len() < 12 {
                return Err(truncated());
            }
            let id = frame.get_u64_le();
            let header_len = frame.get_u32_le() as usize;
            if frame.len() < header_len {
                return Err(truncated());
            }
            let header = frame.split_to(header_len);
            let envelope = Codec::Binary.decode(&header)?;
            Ok(Frame::Request {
                id,
                envelope,
                payload: frame,
            })
        }
        TAG_RESPONSE => {
            if frame.len() < 9 {
                return Err(truncated());
            }
            let id = frame.get_u64_le();
            let result = match frame.get_u8() {
                0 => Ok(frame),
                _ => Err(serde_json::from_slice::<Error>(&frame).unwrap_or_else(|e| {
                    Error::protocol(format!("unreadable error from a worker: {e}"))
                })),
            };
            Ok(Frame::Response { id, result })
        }
        TAG_HELLO if frame.len() == 8 => Ok(Frame::Hello {
            pid: frame.get_u32_le(),
            memory_mb: Some(frame.get_u32_le()).filter(|mb| *mb > 0),
        }),
        TAG_RELEASED if frame.len() == 8 => Ok(Frame::Released {
            id: frame.get_u64_le(),
        }),
        TAG_BUSY if frame.len() == 1 => Ok(Frame::Busy {
            all: frame.get_u8() != 0,
        }),
        TAG_FETCH if frame.len() == 40 => {
            let id = frame.get_u64_le();
            let mut blob = [0u8; 32];
            frame.copy_to_slice(&mut blob);
            Ok(Frame::Fetch {
                id,
                blob: BlobId::from_bytes(blob),
            })
        }
        TAG_REFUSE => Ok(Frame::Refuse {
            error: serde_json::from_slice(&frame).unwrap_or_else(|e| {
                Error::protocol(format!("unreadable refusal from a worker: {e}"))
            }),
        }),
        TAG_RETIRE => Ok(Frame::Retire {
            reason: String::from_utf8_lossy(&frame).into_owned(),
        }),
        other => Err(Error::protocol(format!("unknown frame tag {other}"))),
    }
}

/// How long the rest of a frame may take once its length has arrived: a peer that announces a
/// frame and stops sending is broken, whatever its invocations' timeouts.
const FRAME_ARRIVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest frame of each kind, tag included: a length no frame of its kind can have is refused
/// before anything is read or allocated.
fn largest(tag: u8) -> Option<usize> {
    match tag {
        // Arguments or an output, plus the id, the envelope and its length.
        TAG_REQUEST | TAG_RESPONSE => Some(1 + 12 + MAX_ENVELOPE + MAX_FRAME),
        TAG_HELLO | TAG_RELEASED => Some(1 + 8),
        TAG_BUSY => Some(1 + 1),
        TAG_FETCH => Some(1 + 40),
        TAG_RETIRE => Some(1 + 64 * 1024),
        TAG_REFUSE => Some(1 + 1024 * 1024),
        _ => None,
    }
}

/// Reads one frame (its tag and body); `None` at a clean end of stream. A length its kind cannot
/// have, an unknown tag, or a frame that stops arriving is an `InvalidData` error.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Bytes>> {
    let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidData, message);
    let len = match reader.read_u32_le().await {
        Ok(len) => len as usize,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    };
    let rest = async {
        if len == 0 {
            return Err(invalid("an empty frame".to_owned()));
        }
        let tag = reader.read_u8().await?;
        match largest(tag) {
            None => return Err(invalid(format!("unknown frame tag {tag}"))),
            Some(limit) if len > limit => {
                return Err(invalid(format!(
                    "a frame of tag {tag} announced {len} bytes, more than the {limit} it may have"
                )));
            }
            Some(_) => {}
        }
        let mut buf = BytesMut::zeroed(len);
        buf[0] = tag;
        reader.read_exact(&mut buf[1..]).await?;
        Ok(buf.freeze())
    };
    match tokio::time::timeout(FRAME_ARRIVAL, rest).await {
        Ok(frame) => frame.map(Some),
        Err(_) => Err(invalid(format!(
            "a frame of {len} bytes did not arrive within {} s",
            FRAME_ARRIVAL.as_secs()
        ))),
    }
}

/// Writes queued frames, flushing whenever the queue runs dry so bursts share a syscall.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(frame) = frames.recv().await {
        if writer.write_all(&frame).await.is_err() {
            return;
        }
        while let Ok(frame) = frames.try_recv() {
            if writer.write_all(&frame).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_length(frame: Bytes) -> Bytes {
        let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        frame.slice(4..)
    }

    #[test]
    fn frames_round_trip() {
        let envelope = Envelope::new("app::f", Codec::Json);
        let Frame::Request {
            id,
            envelope: e,
            payload,
        } = decode(strip_length(request(7, &envelope, b"{\"n\":1}").unwrap())).unwrap()
        else {
            panic!("not a request")
        };
        assert_eq!((id, &e, &payload[..]), (7, &envelope, &b"{\"n\":1}"[..]));

        let ok: Result<&[u8]> = Ok(b"42");
        let Frame::Response { id, result } = decode(strip_length(response(9, &ok))).unwrap() else {
            panic!("not a response")
        };
        assert_eq!((id, &result.unwrap()[..]), (9, &b"42"[..]));

        let failed: Result<&[u8]> = Err(Error::panic("boom"));
        let Frame::Response { result, .. } = decode(strip_length(response(9, &failed))).unwrap()
        else {
            panic!("not a response")
        };
        assert_eq!(result.unwrap_err(), Error::panic("boom"));

        let blob = BlobId::of(b"\x02blob");
        let Frame::Fetch { id, blob: asked } = decode(strip_length(fetch(11, &blob))).unwrap()
        else {
            panic!("not a fetch")
        };
        assert_eq!((id, asked), (11, blob));
        assert!(decode(Bytes::from_static(&[TAG_FETCH, 1, 2, 3])).is_err());

        for all in [true, false] {
            let Frame::Busy { all: said } = decode(strip_length(busy(all))).unwrap() else {
                panic!("not a busy frame")
            };
            assert_eq!(said, all);
        }
        assert!(decode(Bytes::from_static(&[TAG_BUSY, 1, 0])).is_err());
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(decode(Bytes::from_static(&[TAG_REQUEST, 1, 2])).is_err());
        assert!(decode(Bytes::from_static(&[99])).is_err());
        assert!(decode(Bytes::new()).is_err());
    }

    #[test]
    fn oversized_payloads_are_refused() {
        let envelope = Envelope::new("app::f", Codec::Binary);
        let big = vec![0u8; MAX_FRAME + 1];
        let error = request(1, &envelope, &big).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::PayloadTooLarge { .. }));
    }

    #[test]
    fn oversized_errors_are_reported_as_too_large() {
        let huge = Error::new(ErrorKind::User {
            message: "x".repeat(MAX_FRAME),
            type_name: "String".into(),
        })
        .in_function("app::f");
        let frame = response(7, &Err::<Vec<u8>, _>(huge));
        assert!(frame.len() < 4096, "{} bytes", frame.len());
        let Frame::Response { id, result } = decode(frame.slice(4..)).unwrap() else {
            panic!("not a response");
        };
        assert_eq!(id, 7);
        let error = result.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::PayloadTooLarge { size, .. } if *size > MAX_FRAME as u64),
            "{error}"
        );
        assert_eq!(error.function(), Some("app::f"));
    }

    /// Whatever a worker or host sends, decoding and reading end in a frame or an error.
    mod robustness {
        use proptest::prelude::*;

        use super::*;

        /// Frames of every tag with bodies of any bytes, their lengths now and then wrong.
        fn frames() -> impl Strategy<Value = Vec<u8>> {
            (
                0u8..=9,
                prop::collection::vec(any::<u8>(), 0..300),
                any::<Option<u32>>(),
            )
                .prop_map(|(tag, body, lie)| {
                    let len = lie.unwrap_or(body.len() as u32 + 1);
                    let mut frame = len.to_le_bytes().to_vec();
                    frame.push(tag);
                    frame.extend(body);
                    frame
                })
        }

        fn read_all(stream: &[u8]) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut reader = stream;
                while let Ok(Some(frame)) = read_frame(&mut reader).await {
                    let _ = decode(frame);
                }
            });
        }

        proptest! {
            #[test]
            fn any_frame_body_decodes_or_is_an_error(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
                let _ = decode(Bytes::from(bytes));
            }

            #[test]
            fn any_stream_reads_as_frames_or_an_error(frames in prop::collection::vec(frames(), 1..4)) {
                read_all(&frames.concat());
            }

            #[test]
            fn any_bytes_read_as_frames_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
                read_all(&bytes);
            }
        }
    }
}
