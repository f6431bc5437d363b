/// The few file operations the library needs, on the C library directly (no Foundation).
package enum Files {
    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let message: String
        /// The file is larger than the limit `read` was given.
        package var tooLarge: Bool = false
        package var description: String { message }
    }

    static func describeErrno(_ code: Int32) -> String {
        guard let s = strerror(code) else { return "errno \(code)" }
        return String(cString: s)
    }

    /// `path` made absolute against the working directory of now ("" stays as it is, for the
    /// caller's own error). A controller resolves its relative paths once, at open, as SQLite
    /// does with a database's name: a host that changes its working directory later (a daemon's
    /// chdir("/"), a test runner's per-test directory) keeps the same image cache and files,
    /// instead of the next user's images or a file source's next read going somewhere else.
    package static func absolute(_ path: String) throws(Failure) -> String {
        if path.isEmpty || isAbsolute(path) { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else {
            throw Failure(message: "cannot resolve the relative path \(path): the working directory is unknown (\(describeErrno(errno)))")
        }
        let directory = String(cString: buffer)
        return directory.utf8.last == 0x2F ? directory + path : directory + "/" + path
    }

    // Paths are bytes, "/" the byte 0x2F. Swift's String compares Characters, and "/" followed
    // by a combining mark (U+0301) is one Character that is not "/": a Character test took
    // "/\u{301}x" for a relative path, and walked past the directory "/tmp/shared" of
    // "/tmp/shared/\u{301}cards" without checking it.

    /// `path` starts at the root.
    static func isAbsolute(_ path: String) -> Bool { path.utf8.first == 0x2F }

    /// The components of `path` between its slashes, empty ones left out.
    static func components(_ path: String) -> [String] {
        path.utf8.split(separator: 0x2F).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The directory holding `path` ("/" for a child of the root), nil for "/" or a path with
    /// no slash.
    static func parent(_ path: String) -> String? {
        guard path != "/", let slash = path.utf8.lastIndex(of: 0x2F) else { return nil }
        if slash == path.utf8.startIndex { return "/" }
        return String(decoding: path.utf8[..<slash], as: UTF8.self)
    }

    /// Reads a whole file, refusing one larger than `limit` bytes.
    package static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(message: "cannot open \(path): \(describeErrno(errno))") }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(message: "cannot read \(path): \(describeErrno(errno))")
            }
            if n == 0 { break }
            if result.count + n > limit {
                throw Failure(message: "\(path) is larger than the limit of \(limit) bytes", tooLarge: true)
            }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// Appends `bytes` and fsyncs, creating the file 0600 if needed. All or nothing: when a
    /// write fails or comes up short (disk full, file size limit, I/O error), the file is cut
    /// back to the length it had, so a retry never finds half a batch before it. An exclusive
    /// `flock` keeps two writers in this library from interleaving or cutting each other's lines.
    /// Only a regular file can be cut back, so nothing else is written: a FIFO (whose open would
    /// block until a reader comes: opened non-blocking, it is refused at once), a device or a
    /// socket is refused with a clear error.
    package static func append(_ path: String, _ bytes: [UInt8]) throws(Failure) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            let e = errno
            if e == ENXIO { throw Failure(message: "cannot append to \(path): it is a FIFO (named pipe), not a regular file") }
            throw Failure(message: "cannot open \(path): \(describeErrno(e))")
        }
        defer { close(fd) }
        var kind = stat()
        guard fstat(fd, &kind) == 0 else { throw Failure(message: "cannot stat \(path): \(describeErrno(errno))") }
        guard (kind.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(message: "cannot append to \(path): it is not a regular file (a FIFO, a device or a socket cannot be cut back after a failed write)")
        }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw Failure(message: "cannot lock \(path): \(describeErrno(errno))") }
        }
        defer { flock(fd, LOCK_UN) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Failure(message: "cannot stat \(path): \(describeErrno(errno))") }
        let before = st.st_size
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in raw.baseAddress.map { write(fd, $0 + offset, raw.count - offset) } ?? 0 }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let reason = n < 0 ? describeErrno(errno) : "nothing written"
                let undone = ftruncate(fd, before) == 0
                throw Failure(message: "cannot write \(path) (\(reason), after \(offset) of \(bytes.count) bytes); "
                    + (undone ? "the file was cut back to its previous \(before) bytes" : "and cannot cut it back: \(describeErrno(errno))"))
            }
            offset += n
        }
        // Written is not kept: a failed sync (EIO, or ENOSPC on a network file system) may lose
        // the bytes, and the batch must then stay pending, as after a failed write.
        if fsync(fd) != 0 {
            let reason = describeErrno(errno)
            let undone = ftruncate(fd, before) == 0
            throw Failure(message: "cannot sync \(path) to disk (\(reason)); "
                + (undone ? "the file was cut back to its previous \(before) bytes" : "and cannot cut it back: \(describeErrno(errno))"))
        }
    }

    /// Writes all of `bytes` to `fd` (again after a signal); false when a write fails or
    /// writes nothing.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            written += n
        }
        return true
    }

    /// Creates `path` (and missing parents) as directories with mode 0700.
    package static func makeDirectory(_ path: String) throws(Failure) {
        var st = stat()
        // There already (every open but a store's first): one stat, not one mkdir a component.
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { return }
        var built = isAbsolute(path) ? "/" : ""
        for part in components(path) {
            built += (built.isEmpty || built.utf8.last == 0x2F ? "" : "/") + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw Failure(message: "cannot create directory \(built): \(describeErrno(errno))")
            }
        }
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw Failure(message: "\(path) is not a directory")
        }
    }

    // MARK: The store's trust boundary (BEHAVIOUR.md, "The store")

    /// A file the library may trust beside its store (a stamp, a kept feed), by its `fstat`: a
    /// regular file of this user, not writable by group or others.
    static func isPrivateRegularFile(_ st: stat) -> Bool {
        st.st_mode & S_IFMT == S_IFREG && st.st_uid == geteuid() && st.st_mode & 0o022 == 0
    }

    static func octal(_ mode: mode_t) -> String { String(mode & 0o7777, radix: 8) }

    /// Creates the storage directory (0700) if needed and checks that it can be trusted, as ssh
    /// checks `~/.ssh`: the directory (symbolic links in its path are followed, as ssh does) must
    /// be owned by this user (the effective uid) and not writable by group or others; each of its
    /// parents must be owned by this user or root and not writable by group or others unless it
    /// has the sticky bit (`/tmp`). Then it must be writable.
    package static func prepareStorageDirectory(_ path: String) throws(Failure) {
        try makeDirectory(path)
        guard let resolved = realpath(path, nil) else {
            throw Failure(message: "cannot resolve the storage directory \(path): \(describeErrno(errno))")
        }
        let real = String(cString: resolved)
        free(resolved)
        let me = geteuid()
        var st = stat()
        guard stat(real, &st) == 0 else { throw Failure(message: "cannot stat \(real): \(describeErrno(errno))") }
        let shown = real == path ? path : "\(path) (\(real))"
        if st.st_uid != me {
            throw Failure(message: "the storage directory \(shown) is owned by uid \(st.st_uid), not by this user (uid \(me)); "
                + "the store must be private: use a directory of your own, or chown \(me) \(real)")
        }
        if st.st_mode & 0o022 != 0 {
            throw Failure(message: "the storage directory \(shown) is writable by group or others (mode \(octal(st.st_mode))); "
                + "the store must be private: chmod 700 \(real)")
        }
        var parent = real
        while let up = Files.parent(parent) {
            parent = up
            var p = stat()
            guard stat(parent, &p) == 0 else { break }
            if p.st_uid != me && p.st_uid != 0 {
                throw Failure(message: "the storage directory \(shown) is inside \(parent), owned by uid \(p.st_uid) (neither this user, uid \(me), nor root), "
                    + "who could replace it: use a directory of your own")
            }
            if p.st_mode & 0o022 != 0 && p.st_mode & S_ISVTX == 0 {
                throw Failure(message: "the storage directory \(shown) is inside \(parent), writable by group or others without the sticky bit (mode \(octal(p.st_mode))), "
                    + "so others could replace it: chmod go-w \(parent), or use another directory")
            }
        }
        if access(real, W_OK | X_OK) != 0 {
            let e = errno
            throw Failure(message: "the storage directory \(shown) is read-only (\(describeErrno(e))); the store needs to write there: chmod 700 \(real)"
                + (e == EROFS ? ", or use a directory on a writable file system" : ""))
        }
    }

    /// Creates the store file 0600 if it does not exist, and checks it and its companions
    /// (`-wal`, `-shm`, `-journal`) without following a symbolic link: each must be a regular
    /// file owned by this user and not writable by group or others. Then the file must be writable.
    package static func prepareStoreFile(_ path: String) throws(Failure) {
        creation.withLock { if access(path, F_OK) != 0 { createStoreFile(path) } }
        for (file, mustExist) in [(path, true), (path + "-wal", false), (path + "-shm", false), (path + "-journal", false)] {
            var st = stat()
            if lstat(file, &st) != 0 {
                if errno == ENOENT && !mustExist { continue }
                throw Failure(message: "cannot create or read the store file \(file): \(describeErrno(errno))")
            }
            let type = st.st_mode & S_IFMT
            if type == S_IFLNK {
                throw Failure(message: "the store file \(file) is a symbolic link; contentcards never follows a link for its store files: remove the link (rm \(file))")
            }
            if type != S_IFREG {
                throw Failure(message: "the store file \(file) is not a regular file: remove it or use another storage directory")
            }
            if st.st_uid != geteuid() {
                throw Failure(message: "the store file \(file) is owned by uid \(st.st_uid), not by this user (uid \(geteuid())): chown \(geteuid()) \(file), or use another storage directory")
            }
            if st.st_mode & 0o022 != 0 {
                throw Failure(message: "the store file \(file) is writable by group or others (mode \(octal(st.st_mode))); the store must be private: chmod 600 \(file)")
            }
        }
        if access(path, R_OK | W_OK) != 0 {
            let e = errno
            throw Failure(message: "the store file \(path) is read-only (\(describeErrno(e))); the store needs to write it: chmod 600 \(path)")
        }
    }

    /// Held while a store file is made, and taken by every `prepareStoreFile`, which every
    /// opening of a store goes through first (a store's second connection, the
    /// checkpointer's, opens a file its controller's opening made). Held across fork(), as
    /// the library's other process-wide locks are (ForkSafety).
    private static let creation: Lock = {
        let lock = Lock()
        ForkSafety.holdAcrossFork(lock)
        return lock
    }()

    /// Makes the empty store file, 0600, unless another thread or process made it first.
    ///
    /// A process keeps its POSIX locks on a file only until it closes any descriptor of it:
    /// a connection of this process that opened the new file between our open and our close
    /// would have lost its SQLite locks at our close (StoreFileSum.swift says what that
    /// allowed). The caller holds `creation`, so no opening in this process gets that far
    /// until our descriptor is closed; other processes keep their locks (they are per
    /// process). Made in place, on every file system: no second name that a crash between
    /// two calls could leave behind (an earlier version linked a file made under another
    /// name into place, and a kill between the link and the unlink left the store a second
    /// name that forgetting a user would not remove).
    private static func createStoreFile(_ path: String) {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            fchmod(fd, 0o600)   // the umask may have taken bits away; never more than 0600 anyway
            close(fd)
        }
    }
}
