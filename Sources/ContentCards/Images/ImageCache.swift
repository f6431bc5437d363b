/// One user's images on disk (docs/BEHAVIOUR.md, "Images"): a private directory beside the store
/// (`<storagePath>/images/<user>`, 0700), one file per image URL (0600, written whole under a
/// temporary name and renamed), bounded in bytes and count, least recently used first out.
///
/// The file of a URL is named by a hash of the URL, so a path never carries the server's text;
/// the user's directory by a hash of the user id. The index of what is on disk lives in memory
/// (read from the directory at open, and again at every prefetch). Other controllers may share
/// the directory (another process, another controller of the same user): the disk is the
/// truth. So a path is handed out only after an `lstat` finds its file (an image another
/// controller evicted is dropped from the index and fetched again), and each prefetch reads
/// the directory first, so its cleaning and eviction see every controller's files.
/// Thread-safe: one lock, never held during I/O of the network.
final class ImageCache: @unchecked Sendable {
    struct Entry {
        let file: String
        var bytes: Int
        /// Last use (the file's mtime): the eviction order.
        var used: Double
    }

    let directory: String
    let limits: Configuration.Images
    private let lock = Lock()
    /// By file name (the URL's hash).
    private var entries: [String: Entry] = [:]
    /// Images of the feed that were fetched and did not fit the bounds beside the feed's
    /// earlier images, by file name: their size, so that the same feed fetches them no more
    /// (in this process; at most `4 × maxCount` are remembered).
    private var didNotFit: [String: Int] = [:]

    /// The folder of every user's directory (`<storagePath>/images`).
    private let base: String

    /// Opens (creating 0700) the user's directory under `root` and reads what it holds.
    init(root: String, userID: String, limits: Configuration.Images) throws(Files.Failure) {
        base = root.hasSuffix("/") ? root + "images" : root + "/images"
        directory = base + "/" + ImageCache.hash(userID)
        self.limits = limits
        try ensureDirectory()
        scan()
    }

    /// Makes the directories again when they are gone (a forget of this user by another
    /// controller, the host), and checks they are still private directories, not links: each
    /// prefetch asks first. The folder above is checked before anything is made in it.
    func ensureDirectory() throws(Files.Failure) {
        var st = stat()
        if lstat(base, &st) == 0 { try ImageCache.checkPrivate(base) }
        try Files.makeDirectory(directory)
        try ImageCache.checkPrivate(base)
        try ImageCache.checkPrivate(directory)
    }

    /// The cache directories must be this user's and closed to others, as the store's is.
    private static func checkPrivate(_ path: String) throws(Files.Failure) {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw Files.Failure(message: "the image cache \(path) is not a directory (a symbolic link is never followed)")
        }
        if st.st_uid != geteuid() || st.st_mode & 0o077 != 0 {
            throw Files.Failure(message: "the image cache \(path) must be a private directory of this user (mode \(Files.octal(st.st_mode)), uid \(st.st_uid)): chmod 700 \(path)")
        }
    }

    /// The hex of two 64-bit FNV-1a hashes of the bytes (128 bits: no two URLs of a feed share a file).
    static func hash(_ text: String) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325, b: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in text.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 &+ 0x9e37_79b9
        }
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return hex(a) + hex(b)
    }

    private func path(_ file: String) -> String { directory + "/" + file }

    /// A temporary file older than this is a leftover of an interrupted write (a younger one
    /// may be another controller's write in progress).
    static let staleTemporarySeconds: Double = 600

    /// Reads the directory: regular files named like ours; leftovers of an interrupted write
    /// (`.tmp`, older than `staleTemporarySeconds`) are removed, and so are empty files (a
    /// write cut short by a crash: the library writes none). A file larger than
    /// `maxImageBytes` is not ours to count (another configuration's, or planted: a sparse
    /// file of exabytes made the sums of sizes overflow): left out of the index, never served.
    func scan() {
        guard let names = fileNames() else { return }
        var found: [String: Entry] = [:]
        for name in names {
            var st = stat()
            if name.hasSuffix(".tmp") {
                if lstat(path(name), &st) == 0, Double(time(nil)) - Double(Platform.modificationTime(st).seconds) > Self.staleTemporarySeconds {
                    unlink(path(name))
                }
                continue
            }
            guard name.utf8.count == 32, lstat(path(name), &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            if st.st_size == 0 { unlink(path(name)); continue }
            guard st.st_size <= limits.maxImageBytes else { continue }
            let modified = Platform.modificationTime(st)
            found[name] = Entry(file: name, bytes: Int(st.st_size),
                                used: Double(modified.seconds) + Double(modified.nanoseconds) / 1e9)
        }
        // A file this index knew keeps the later of the two last uses: the one in memory is
        // exact, a file's time is as coarse as the kernel's clock tick (two uses within a tick
        // would tie, and the eviction order between them would be left to chance).
        lock.withLock {
            for (name, known) in entries {
                if var entry = found[name] {
                    entry.used = max(entry.used, known.used)
                    found[name] = entry
                }
            }
            entries = found
        }
    }

    /// The names in the directory but "." and ".."; nil when it cannot be read.
    private func fileNames() -> [String]? {
        guard let dir = opendir(directory) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let item = readdir(dir) {
            // Only the bytes up to the NUL are the kernel's (the rest of d_name is not set):
            // strlen's length, never the whole array.
            var raw = item.pointee.d_name
            let size = MemoryLayout.size(ofValue: raw)
            let name = withUnsafePointer(to: &raw) { p in
                p.withMemoryRebound(to: CChar.self, capacity: size) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Whether `url` may be fetched and served: no space or control character. A URL goes to
    /// libcurl and to a host transport as a C string, where a NUL would cut it and another
    /// image be fetched and cached under this URL (a copy cached so before is not served).
    /// Spaces and control characters are refused as the configuration's URLs are.
    static func holdsNoControl(_ url: String) -> Bool {
        !url.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
    }

    /// The file of `url` when the cache holds it.
    func path(for url: String) -> String? { paths(for: [url])[0] }

    /// Paths of the cached images among `urls` (reading a feed): the index says which may be
    /// here, and an `lstat` of each confirms it, so a path handed out names a file that exists
    /// (another controller sharing the directory may have evicted it: then it leaves the index,
    /// and the next prefetch fetches it again).
    func paths(for urls: [String?]) -> [String?] {
        let files = urls.map { url in url.flatMap { Self.holdsNoControl($0) ? ImageCache.hash($0) : nil } }
        let present: [Bool] = lock.withLock { files.map { $0.map { entries[$0] != nil } ?? false } }
        var gone: [String] = []
        let out: [String?] = zip(files, present).map { file, here in
            guard here, let file else { return nil }
            let full = path(file)
            var st = stat()
            if lstat(full, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG { return full }
            gone.append(file)
            return nil
        }
        if !gone.isEmpty { lock.withLock { for f in gone { entries[f] = nil } } }
        return out
    }

    /// Marks `url` used now (it is wanted again): it moves to the back of the eviction order.
    /// False when the cache does not hold it (any more: a file another controller removed).
    func touch(_ url: String, now: Double) -> Bool {
        let file = ImageCache.hash(url)
        let here: Bool = lock.withLock {
            guard entries[file] != nil else { return false }
            entries[file]?.used = now
            return true
        }
        guard here else { return false }
        if utimensat(AT_FDCWD, path(file), nil, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT {
            lock.withLock { entries[file] = nil }
            return false
        }
        return true
    }

    /// The bytes of `url`'s cached image; nil when not cached.
    func size(of url: String) -> Int? {
        let file = ImageCache.hash(url)
        return lock.withLock { entries[file]?.bytes }
    }

    /// The size of `url`'s image when it was fetched before and did not fit (`didNotFit`).
    func sizeThatDidNotFit(_ url: String) -> Int? {
        let file = ImageCache.hash(url)
        return lock.withLock { didNotFit[file] }
    }

    func noteDidNotFit(_ url: String, bytes: Int) {
        let file = ImageCache.hash(url)
        lock.withLock {
            if didNotFit.count >= 4 * max(limits.maxCount, 1) { didNotFit.removeAll() }
            didNotFit[file] = bytes
        }
    }

    /// Stores the bytes of `url` (0600, written whole, then renamed into place). Returns false
    /// when the file could not be written, or `publish` (which runs the rename, under the
    /// caller's lock) did not: the controller closed meanwhile, or the user was forgotten, and
    /// nothing is left behind.
    func store(_ url: String, _ bytes: [UInt8], now: Double, publish: (() -> Bool) -> Bool = { $0() }) -> Bool {
        let file = ImageCache.hash(url)
        // Unique to this write: two controllers of one process may fetch the same image.
        let temporary = path(file) + ".\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let ok = bytes.withUnsafeBytes { Files.writeAll(fd, $0) }
        fchmod(fd, 0o600)
        close(fd)
        guard ok, publish({ rename(temporary, path(file)) == 0 }) else {
            unlink(temporary)
            return false
        }
        lock.withLock { entries[file] = Entry(file: file, bytes: bytes.count, used: now) }
        return true
    }

    /// Removes entries until the cache is within its bounds: first the least recently used of
    /// those not in `feed`, then those of `feed` from its end (the images of the feed's first
    /// cards are the last to go).
    func evict(keeping feed: [String] = []) {
        var rank: [String: Int] = [:]
        for (i, file) in feed.enumerated() where rank[file] == nil { rank[file] = i }
        let doomed: [String] = lock.withLock {
            var total = entries.values.reduce(0) { $0 + $1.bytes }
            var count = entries.count
            guard total > limits.maxBytes || count > limits.maxCount else { return [] }
            let order = entries.values.sorted { a, b in
                switch (rank[a.file], rank[b.file]) {
                case (nil, nil): return a.used < b.used
                case (nil, _): return true
                case (_, nil): return false
                case let (x?, y?): return x > y
                }
            }
            var out: [String] = []
            for e in order where total > limits.maxBytes || count > limits.maxCount {
                entries[e.file] = nil
                total -= e.bytes
                count -= 1
                out.append(e.file)
            }
            return out
        }
        for file in doomed { unlink(path(file)) }
    }

    /// Removes every image whose URL is not in `urls` (the cards that went). An array, hashed
    /// here: a `Set<String>` of URLs took two canonically equivalent URLs (two files) for one,
    /// and the second one's image was removed at every prefetch.
    func keepOnly(_ urls: [String]) -> Int {
        let wanted = Set(urls.map(ImageCache.hash))
        let doomed: [String] = lock.withLock {
            let out = entries.keys.filter { !wanted.contains($0) }
            for f in out { entries[f] = nil }
            return out
        }
        for file in doomed { unlink(path(file)) }
        return doomed.count
    }

    /// Removes every file of the library's names in the directory, indexed or not (a file over
    /// this configuration's `maxImageBytes` is left out of the index, but a forget leaves
    /// nothing), and temporary files; returns how many images went.
    func removeEverything() -> Int {
        lock.withLock { entries.removeAll() }
        var removed = 0
        for name in fileNames() ?? [] where name.utf8.count == 32 || name.hasSuffix(".tmp") {
            var st = stat()
            guard lstat(path(name), &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, unlink(path(name)) == 0 else { continue }
            if !name.hasSuffix(".tmp") { removed += 1 }
        }
        return removed
    }

    /// Images held and their bytes.
    var usage: (count: Int, bytes: Int) {
        lock.withLock { (entries.count, entries.values.reduce(0) { $0 + $1.bytes }) }
    }
}
