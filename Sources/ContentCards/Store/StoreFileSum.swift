import CSQLite

/// The XXH64 of a store file's bytes, 64 KiB at a time (each piece's sum seeds the next):
/// what ties a kept feed to the exact file it was written for (`KeptFeed`). Read, not mapped:
/// another process's SQLite may change the file's length while it is read, which a mapping
/// would answer with SIGBUS.
///
/// Read through SQLite's own file layer, never with a descriptor of its own. A process holds
/// its POSIX locks on a file until it closes *any* descriptor of that file: a sum read with
/// `open` and `close` dropped every lock this process's SQLite connections held on the store
/// (the close of one controller, or an open beside another controller of the same store).
/// SQLite still believed them held, so another process could take the store's exclusive
/// lock, and its last connection's close then emptied the WAL into the file and cut it to
/// nothing while this process was writing to it: a damaged store (Tests/c/test_kept.c). The
/// unix VFS closes a descriptor while locks are held on its file only once they are released.
enum StoreFileSum {
    static func of(_ path: String) -> UInt64? {
        // A regular file, not through a symbolic link (NOFOLLOW below): never a FIFO, whose
        // open would wait for a writer.
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size <= Int64(KeptFeed.maxBytes) else { return nil }
        // Maybe the process's first use of SQLite: the fork handlers and settings first, the
        // connections a child of fork() inherited closed (ForkSafety+Connections.swift).
        let found = ForkSafety.sqlite { () -> UnsafeMutablePointer<sqlite3_vfs>? in
            ForkSafety.beforeUse()
            return sqlite3_vfs_find(nil)
        }
        guard let vfs = found, let open = vfs.pointee.xOpen else { return nil }
        let file = UnsafeMutableRawPointer.allocate(byteCount: Int(vfs.pointee.szOsFile), alignment: 16)
            .bindMemory(to: sqlite3_file.self, capacity: 1)
        defer { file.deallocate() }
        file.pointee.pMethods = nil
        // The layer keeps the name until the file is closed. Laid out as SQLite lays out a
        // database file's name: four NUL bytes before it and two after, since a layer may
        // look past its end for URI parameters, and SQLite's name functions
        // (`sqlite3_filename_database`) walk back from it to the four NULs.
        let length = path.utf8.count
        guard let block = calloc(4 + length + 2, 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
        defer { free(block) }
        let name = block + 4
        path.withCString { _ = memcpy(name, $0, length) }
        let flags = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW
        let rc = ForkSafety.sqlite { open(vfs, name, file, flags, nil) }
        // A file whose open failed is closed too when the layer left its methods set.
        guard let methods = file.pointee.pMethods else { return nil }
        defer { _ = ForkSafety.sqlite { methods.pointee.xClose(file) } }
        guard rc == SQLITE_OK, let read = methods.pointee.xRead, let fileSize = methods.pointee.xFileSize else { return nil }
        var size: sqlite3_int64 = 0
        guard ForkSafety.sqlite({ fileSize(file, &size) }) == SQLITE_OK, size <= sqlite3_int64(KeptFeed.maxBytes) else { return nil }
        let piece = 64 << 10
        guard let buffer = malloc(piece) else { return nil }
        defer { free(buffer) }
        var sum: UInt64 = 0
        var offset: sqlite3_int64 = 0
        while offset < size {
            let n = Int(min(sqlite3_int64(piece), size - offset))
            // SQLITE_IOERR_SHORT_READ: the file is shorter than it was a moment ago (zeros
            // stand for the rest): not a sum of the file as it is.
            guard ForkSafety.sqlite({ read(file, buffer, Int32(n), offset) }) == SQLITE_OK else { return nil }
            sum = RecordSum.xxh64(UnsafeBufferPointer(start: buffer.assumingMemoryBound(to: UInt8.self), count: n), seed: sum)
            offset += sqlite3_int64(n)
        }
        // Grown while it was read: not the file as it is either.
        var after: sqlite3_int64 = 0
        guard ForkSafety.sqlite({ fileSize(file, &after) }) == SQLITE_OK, after == size else { return nil }
        return sum
    }
}
