//! The embedded local platform: [`client`] is the `local` backend (it starts and schedules warm
//! worker processes of this executable), [`server`] the worker side, and [`protocol`] the frames
//! both speak over the Unix socket on fd 3.

#[cfg(feature = "local")]
pub(crate) mod client;
pub(crate) mod protocol;
#[cfg(feature = "local")]
pub(crate) mod server;

#[cfg(feature = "local")]
pub(crate) use self::client::LocalBackend;
#[cfg(feature = "local")]
pub use self::client::LocalConfig;

/// The fd on which a worker finds its socket to the platform.
pub(crate) const WORKER_FD: i32 = 3;

/// A worker names the thread running a sync body `ferry#<slot>` (the invocation's slot, in hex,
/// its low 36 bits: a thread name holds 15 bytes), so the platform can tell which invocation's
/// thread took the memory when the worker passes its limit.
pub(crate) const THREAD_LABEL: &str = "ferry#";

/// The bits of a slot a thread label carries.
pub(crate) const LABEL_MASK: u64 = (1 << 36) - 1;

/// Tells the platform that started this process as a worker that it will not serve: its `main`
/// is not ferry's. Written straight to the socket on fd 3, which nothing else here uses.
pub(crate) fn refuse_as_worker(error: &crate::Error) {
    // SAFETY: fstat only fills the buffer it is given.
    let is_socket = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(WORKER_FD, &mut stat) == 0 && (stat.st_mode & libc::S_IFMT) == libc::S_IFSOCK
    };
    if !is_socket {
        return;
    }
    let frame = protocol::refuse(error);
    let mut written = 0;
    while written < frame.len() {
        // SAFETY: writes from a live buffer to an open descriptor.
        let n = unsafe {
            libc::write(
                WORKER_FD,
                frame[written..].as_ptr().cast(),
                frame.len() - written,
            )
        };
        match n {
            n if n > 0 => written += n as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}
