//! The coordinator–agent protocol: its messages, and their framing on a
//! byte stream (a 4-byte big-endian length, then that many bytes of JSON).
//! Pure: [`encode`] writes into a buffer the caller owns; [`decode`] takes
//! one whole frame off the front of a buffer, `Ok(None)` when it has not
//! all arrived yet. The length is checked against [`MAX_FRAME`] before
//! anything is allocated for it.
//!
//! One run, as the coordinator sees it:
//! ```text
//! agent → Hello{id?, name, version}
//! coord → Welcome{id}                     (or Abort{reason} and close)
//! coord → Ping{t1}   agent → Pong{t1, t2, t3}      × PINGS (clock offset)
//! coord → Start{job, start_at, offset, …}          (or Abort{reason})
//! agent → Results{results}                 (or Failed{reason})
//! ```

use serde::{Deserialize, Serialize};

/// Largest frame either side accepts: an agent's results file with full
/// histograms of a long sweep stays far below it.
pub const MAX_FRAME: usize = 64 << 20;

/// Messages from an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromAgent {
    /// First message. `id`: the agent's number when something outside
    /// assigned it (a Kubernetes completion index), else the coordinator
    /// assigns one. `name`: the agent's host name, for people.
    Hello {
        id: Option<u32>,
        name: String,
        version: String,
    },
    /// Answer to [`ToAgent::Ping`]: `t2` when the ping arrived and `t3`
    /// when this answer left, both on the agent's clock (Unix ns).
    Pong { t1: i64, t2: i64, t3: i64 },
    /// The agent's results file (the bench command's JSON), whole.
    Results { results: serde_json::Value },
    /// The agent could not run the bench command at all.
    Failed { reason: String },
}

/// Messages from the coordinator. `J` is the job every agent runs, in
/// its serde form (the engine's typed job); this crate only carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToAgent<J = serde_json::Value> {
    /// Registered under this id.
    Welcome { id: u32 },
    /// Clock probe sent at `t1` on the coordinator's clock (Unix ns).
    Ping { t1: i64 },
    /// Run `job` so that its first measured case starts at `start_at` on
    /// the coordinator's clock, its k-th at `start_at + k·case_period_ns`.
    /// `offset_ns` is the agent's clock minus the coordinator's, as
    /// measured: the agent starts at `start_at + offset_ns` on its own.
    Start {
        id: u32,
        agents: u32,
        job: J,
        start_at: i64,
        offset_ns: i64,
        case_period_ns: u64,
    },
    /// Not admitted to the run (or the run was called off), and why.
    Abort { reason: String },
}

/// A frame that cannot be read, and whose fault that is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The peer announced a frame larger than [`MAX_FRAME`].
    #[error("peer announced a {len}-byte message, over the {limit}-byte limit")]
    TooLarge { len: usize, limit: usize },
    /// The peer sent bytes that are not one of the protocol's messages.
    #[error("peer sent a malformed message: {0}")]
    Malformed(String),
}

/// Append `msg` as one frame to `out`.
pub fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) {
    let body = serde_json::to_vec(msg).expect("protocol messages serialize");
    assert!(body.len() <= MAX_FRAME, "own message over MAX_FRAME");
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
}

/// Take one whole frame off the front of `buf`, if it has arrived.
pub fn decode<T: for<'de> Deserialize<'de>>(buf: &mut Vec<u8>) -> Result<Option<T>, WireError> {
    let Some(n) = frame_len(buf)? else {
        return Ok(None);
    };
    if buf.len() < 4 + n {
        return Ok(None);
    }
    let msg =
        serde_json::from_slice(&buf[4..4 + n]).map_err(|e| WireError::Malformed(e.to_string()));
    buf.drain(..4 + n);
    msg.map(Some)
}

/// The announced body length of the frame at the front of `buf`, checked
/// against the limit; `None` until the 4 length bytes have arrived.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, WireError> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let n = u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize;
    if n > MAX_FRAME {
        return Err(WireError::TooLarge {
            len: n,
            limit: MAX_FRAME,
        });
    }
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_wait_for_all_bytes() {
        let msgs = vec![
            ToAgent::Welcome { id: 3 },
            ToAgent::Start {
                id: 3,
                agents: 4,
                job: serde_json::json!({"bench": "latency"}),
                start_at: 1_700_000_000_000_000_000,
                offset_ns: -1234,
                case_period_ns: 2_000_000_000,
            },
        ];
        let mut bytes = Vec::new();
        for m in &msgs {
            encode(m, &mut bytes);
        }
        // Fed one byte at a time, each message appears exactly when its
        // last byte does.
        let mut buf = Vec::new();
        let mut got = Vec::new();
        for b in bytes {
            buf.push(b);
            while let Some(m) = decode::<ToAgent>(&mut buf).unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, msgs);
        assert!(buf.is_empty());
    }

    #[test]
    fn oversized_and_malformed_frames_are_refused() {
        let mut buf = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
        assert_eq!(
            decode::<FromAgent>(&mut buf),
            Err(WireError::TooLarge {
                len: MAX_FRAME + 1,
                limit: MAX_FRAME
            })
        );
        let mut buf = 2u32.to_be_bytes().to_vec();
        buf.extend_from_slice(b"{}");
        assert!(matches!(
            decode::<FromAgent>(&mut buf),
            Err(WireError::Malformed(_))
        ));
        let mut buf = vec![0, 0];
        assert_eq!(decode::<FromAgent>(&mut buf), Ok(None));
    }
}
