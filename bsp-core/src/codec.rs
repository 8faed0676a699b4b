//! The serde codec for queue messages that are not plain bytes.
//!
//! `T: bytemuck::Pod` never comes here: it travels as its raw bytes. Any
//! other message type `T: Serialize + DeserializeOwned` is encoded with
//! `bincode` 2.0.1 in its standard configuration (little-endian, variable-length
//! integers), pinned to that exact release: bincode is no longer maintained
//! and its only later release (3.0.0) is a deliberate compile error. It is the
//! compact, schema-less, serde-native format we need, and this module is the
//! only place that names it, so replacing it (postcard, say) touches nothing
//! else.

use serde::de::DeserializeOwned;
use serde::Serialize;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Appends the encoding of `msg` to `out`.
///
/// # Panics
///
/// If serde fails to serialize `msg` (for example a map with non-string keys
/// in a type whose `Serialize` impl refuses it).
pub(crate) fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) {
    bincode::serde::encode_into_std_write(msg, out, config())
        .unwrap_or_else(|e| panic!("bsp: cannot serialize a queue message: {e}"));
}

/// Decodes `count` messages laid end to end in `bytes`.
///
/// # Panics
///
/// If the bytes do not decode, which means sender and receiver disagree on
/// the message type.
pub(crate) fn decode_all<T: DeserializeOwned>(count: u64, mut bytes: &[u8], out: &mut Vec<T>) {
    for _ in 0..count {
        let (msg, used) = decode_one(bytes);
        out.push(msg);
        bytes = &bytes[used..];
    }
}

/// Decodes the first message in `bytes`; returns it and the bytes it took.
///
/// # Panics
///
/// As [`decode_all`].
pub(crate) fn decode_one<T: DeserializeOwned>(bytes: &[u8]) -> (T, usize) {
    bincode::serde::decode_from_slice(bytes, config())
        .unwrap_or_else(|e| panic!("bsp: cannot deserialize a queue message: {e}"))
}

/// Decodes the value that fills `bytes` exactly, or says why it cannot.
pub(crate) fn try_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    match bincode::serde::decode_from_slice(bytes, config()) {
        Ok((value, used)) if used == bytes.len() => Ok(value),
        Ok((_, used)) => Err(format!("{} bytes left over", bytes.len() - used)),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let msgs = vec![(String::from("a"), vec![1u32, 2]), (String::new(), vec![])];
        let mut buf = Vec::new();
        for m in &msgs {
            super::encode(m, &mut buf);
        }
        let mut back = Vec::new();
        super::decode_all::<(String, Vec<u32>)>(2, &buf, &mut back);
        assert_eq!(back, msgs);
    }
}
