//! Large buffers a process holds for a while (request bodies, cached blobs) in memory of their
//! own: an anonymous mapping per buffer, unmapped when its last `Bytes` goes, so the memory
//! returns to the system at once.
//!
//! In the allocator's heap it might not. glibc's `malloc` maps an allocation this large only
//! until the first such mapping is freed; then it raises its threshold and serves them from its
//! arenas, where a freed 1 MiB blob leaves a hole that smaller buffers split, and the next blob
//! extends the heap instead. A flood of 1 MiB uploads to an HTTP service grew its resident set
//! 30 to 65 MiB past the blob cache's 64 MiB bound that way, and kept it after the flood.

use std::ptr::NonNull;

use bytes::Bytes;

/// From this size a buffer gets a mapping of its own (glibc's own initial mmap threshold):
/// below it, the page a mapping rounds up to would waste too much.
pub(crate) const MAPPED_FROM: usize = 128 << 10;

/// `bytes` in a buffer of their own: a mapping when large, else the heap.
pub(crate) fn copy(bytes: &[u8]) -> Bytes {
    let mut buffer = Buffer::with_capacity(bytes.len());
    if buffer.extend(bytes) {
        buffer.freeze()
    } else {
        Bytes::copy_from_slice(bytes)
    }
}

/// A buffer filled in pieces up to a capacity: of exactly that size (in a mapping when large),
/// or growing on the heap.
#[derive(Debug)]
pub(crate) struct Buffer {
    storage: Storage,
    len: usize,
    capacity: usize,
}

#[derive(Debug)]
enum Storage {
    Heap(Vec<u8>),
    Mapped(Mapping),
}

impl Buffer {
    /// Room for exactly `capacity` bytes, taken at once.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let storage = match (capacity >= MAPPED_FROM)
            .then(|| Mapping::new(capacity))
            .flatten()
        {
            Some(mapping) => Storage::Mapped(mapping),
            // Too small, or no mapping to be had (a process's count of mappings is bounded).
            None => Storage::Heap(Vec::with_capacity(capacity)),
        };
        Self {
            storage,
            len: 0,
            capacity,
        }
    }

    /// A heap buffer that grows as it is filled, up to `capacity` bytes: for a size not known in
    /// advance.
    pub(crate) fn growing(capacity: usize) -> Self {
        Self {
            storage: Storage::Heap(Vec::new()),
            len: 0,
            capacity,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `bytes`, or returns false (appending nothing) when they would overrun the
    /// capacity.
    pub(crate) fn extend(&mut self, bytes: &[u8]) -> bool {
        let end = match self.len.checked_add(bytes.len()) {
            Some(end) if end <= self.capacity => end,
            _ => return false,
        };
        match &mut self.storage {
            Storage::Heap(vec) => vec.extend_from_slice(bytes),
            Storage::Mapped(mapping) => mapping.as_mut()[self.len..end].copy_from_slice(bytes),
        }
        self.len = end;
        true
    }

    /// What was written; a mapping is unmapped when the last `Bytes` of it is dropped.
    pub(crate) fn freeze(self) -> Bytes {
        match self.storage {
            Storage::Heap(vec) => Bytes::from(vec),
            Storage::Mapped(mapping) => Bytes::from_owner(mapping).slice(..self.len),
        }
    }
}

/// A private anonymous mapping, owned like a `Box<[u8]>`.
struct Mapping {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is memory this value owns alone, like a `Box<[u8]>`.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only reads.
unsafe impl Sync for Mapping {}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapping({} bytes)", self.len)
    }
}

impl Mapping {
    fn new(len: usize) -> Option<Self> {
        if len == 0 {
            return None;
        }
        // SAFETY: asks for a fresh private anonymous mapping, which only the returned value
        // refers to. Its pages are zero, and take no memory until they are written.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return None;
        }
        Some(Self {
            start: NonNull::new(start.cast())?,
            len,
        })
    }
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `len` bytes from `start` are mapped, initialized (zero or written) and
        // readable while `self` lives.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl AsMut<[u8]> for Mapping {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_ref`, borrowed exclusively through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped, once; no slice of it outlives `self`.
        unsafe { libc::munmap(self.start.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_is_mapped_and_filled_in_pieces() {
        let mut buffer = Buffer::with_capacity(MAPPED_FROM + 10);
        assert!(matches!(buffer.storage, Storage::Mapped(_)));
        let piece: Vec<u8> = (0..=255).collect();
        let mut expected = Vec::new();
        while buffer.len() + piece.len() <= MAPPED_FROM + 10 {
            assert!(buffer.extend(&piece));
            expected.extend_from_slice(&piece);
        }
        assert!(!buffer.extend(&piece), "no room past the capacity");
        let bytes = buffer.freeze();
        assert_eq!(bytes, expected);
        let tail = bytes.slice(bytes.len() - 3..);
        drop(bytes);
        assert_eq!(
            tail,
            expected[expected.len() - 3..],
            "a slice keeps the mapping"
        );
    }

    #[test]
    fn small_and_growing_buffers_are_on_the_heap() {
        let mut small = Buffer::with_capacity(10);
        assert!(matches!(small.storage, Storage::Heap(_)));
        assert!(small.extend(b"hello"));
        assert!(!small.extend(b"world!"), "no room past the capacity");
        assert_eq!(small.freeze(), &b"hello"[..]);
        let mut growing = Buffer::growing(1_000_000);
        for _ in 0..1000 {
            assert!(growing.extend(&[7; 1000]));
        }
        assert!(!growing.extend(&[7]));
        assert_eq!(growing.freeze().len(), 1_000_000);
        assert_eq!(copy(&[1; MAPPED_FROM]), vec![1; MAPPED_FROM]);
        assert_eq!(copy(b""), &b""[..]);
    }
}
