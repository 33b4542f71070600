//! What an SDK task holds in memory, counted by walking it: the bound of
//! [`MemoryTaskStore`](crate::store::MemoryTaskStore) in the bytes malloc hands out, not in the
//! length of the task's JSON, which a peer can make tell far too little (a part `{"text":""}`
//! is 11 bytes of JSON and about 150 in memory) and which cost a serialization (with its
//! timestamps formatted) at every write of a task.

use std::collections::HashMap;
use std::mem::size_of;

use a2a::{Artifact, Message, Part, PartContent, Task};
use serde_json::Value;

/// The bytes malloc takes for a block of `n` (glibc: an 8-byte header, 16-byte steps, a 32-byte
/// least); nothing for none.
fn block(n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    (n.saturating_add(8 + 15) & !15).max(32) as u64
}

fn string(text: &String) -> u64 {
    block(text.capacity())
}

fn strings(list: &Option<Vec<String>>) -> u64 {
    list.as_ref().map_or(0, |list| {
        block(list.capacity() * size_of::<String>()) + list.iter().map(string).sum::<u64>()
    })
}

fn optional(text: &Option<String>) -> u64 {
    text.as_ref().map_or(0, string)
}

/// A hash map's table (hashbrown: a power of two of buckets for 7/8 of them used, a control
/// byte each and a group's worth more) and what its keys and values hold.
fn metadata(map: &Option<HashMap<String, Value>>) -> u64 {
    let Some(map) = map else {
        return 0;
    };
    let capacity = map.capacity();
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    let table = block(buckets * (size_of::<(String, Value)>() + 1) + 16);
    table
        + map
            .iter()
            .map(|(key, value)| string(key) + self::value(value))
            .sum::<u64>()
}

/// What a JSON value holds beyond its own inline bytes. Walked with a stack of its own, not
/// by recursion: an executor may build a value of any depth.
fn value(root: &Value) -> u64 {
    /// An object's member in a B-tree's node (its key and value, with the node's slack).
    const MEMBER: u64 = (size_of::<String>() + size_of::<Value>()) as u64 * 3 / 2;
    let mut total = 0;
    let mut stack = Vec::new();
    let mut next = Some(root);
    while let Some(value) = next {
        match value {
            Value::String(text) => total += string(text),
            Value::Array(items) => {
                total += block(items.capacity() * size_of::<Value>());
                stack.extend(items);
            }
            Value::Object(members) => {
                total += members.len() as u64 * MEMBER;
                for (key, value) in members {
                    total += string(key);
                    stack.push(value);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
        next = stack.pop();
    }
    total
}

fn part(part: &Part) -> u64 {
    let content = match &part.content {
        PartContent::Text(text) | PartContent::Url(text) => string(text),
        PartContent::Raw(bytes) => block(bytes.capacity()),
        PartContent::Data(data) => value(data),
    };
    content + optional(&part.filename) + optional(&part.media_type) + metadata(&part.metadata)
}

fn parts(parts: &Vec<Part>) -> u64 {
    block(parts.capacity() * size_of::<Part>()) + parts.iter().map(part).sum::<u64>()
}

fn message(message: &Message) -> u64 {
    string(&message.message_id)
        + optional(&message.context_id)
        + optional(&message.task_id)
        + parts(&message.parts)
        + metadata(&message.metadata)
        + strings(&message.extensions)
        + strings(&message.reference_task_ids)
}

fn artifact(artifact: &Artifact) -> u64 {
    string(&artifact.artifact_id)
        + optional(&artifact.name)
        + optional(&artifact.description)
        + parts(&artifact.parts)
        + metadata(&artifact.metadata)
        + strings(&artifact.extensions)
}

/// The heap bytes `task` holds (its own inline bytes not counted: they are where it is kept).
pub(crate) fn task(task: &Task) -> u64 {
    let history = task.history.as_ref().map_or(0, |history| {
        block(history.capacity() * size_of::<Message>()) + history.iter().map(message).sum::<u64>()
    });
    let artifacts = task.artifacts.as_ref().map_or(0, |artifacts| {
        block(artifacts.capacity() * size_of::<Artifact>())
            + artifacts.iter().map(artifact).sum::<u64>()
    });
    string(&task.id)
        + string(&task.context_id)
        + task.status.message.as_ref().map_or(0, message)
        + history
        + artifacts
        + metadata(&task.metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_with(parts: Vec<Part>) -> Task {
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: Some(vec![Message {
                message_id: "m".into(),
                context_id: None,
                task_id: None,
                role: a2a::Role::User,
                parts,
                metadata: None,
                extensions: None,
                reference_task_ids: None,
            }]),
            metadata: None,
        }
    }

    #[test]
    fn malloc_blocks_are_counted_as_glibc_hands_them_out() {
        assert_eq!(block(0), 0);
        assert_eq!(block(1), 32);
        assert_eq!(block(24), 32);
        assert_eq!(block(25), 48);
        assert_eq!(block(1000), 1008);
    }

    #[test]
    fn empty_parts_weigh_what_they_take_not_their_json() {
        // 10,000 empty text parts: 110 KB of JSON, ~1.3 MB in memory.
        let task = task_with(vec![Part::text(""); 10_000]);
        let weight = self::task(&task);
        assert!(weight >= 10_000 * size_of::<Part>() as u64, "{weight}");
        assert!(
            weight < 10_000 * (size_of::<Part>() as u64 + 64),
            "{weight}"
        );
    }

    #[test]
    fn text_weighs_its_bytes() {
        let task = task_with(vec![Part::text("x".repeat(100_000))]);
        let weight = self::task(&task);
        assert!((100_000..101_000).contains(&weight), "{weight}");
    }

    #[test]
    fn deep_data_is_walked_without_recursion() {
        let mut deep = Value::Null;
        for _ in 0..200_000 {
            deep = Value::Array(vec![deep]);
        }
        let task = task_with(vec![Part {
            content: PartContent::Data(deep),
            filename: None,
            media_type: None,
            metadata: None,
        }]);
        let weight = self::task(&task);
        assert!(weight >= 200_000 * 32, "{weight}");
        // Dropping it recursively would overflow the test's stack: take it apart by hand.
        let mut value = match task
            .history
            .unwrap()
            .pop()
            .unwrap()
            .parts
            .pop()
            .unwrap()
            .content
        {
            PartContent::Data(value) => value,
            _ => unreachable!(),
        };
        while let Value::Array(mut items) = value {
            value = items.pop().unwrap_or(Value::Null);
        }
    }
}
