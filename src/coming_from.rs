#![doc = include_str!("coming_from.md")]
