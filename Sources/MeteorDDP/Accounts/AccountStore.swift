import Foundation
import NIOConcurrencyHelpers

/// Where the client keeps the logged-in account between runs, so a restarted client resumes its login.
///
/// # Implementation requirements
/// `load()` returns what the last `save(_:)` stored (`nil` after `save(nil)`), across process restarts for a
/// persistent store; it throws ``AccountError`` rather than returning a half-read account.
/// `AccountStoreTests` shows the contract as a test.
public protocol AccountStore: Sendable {
    /// The stored account, if any.
    func load() throws -> Account?
    /// Stores the account, or clears it with `nil`.
    func save(_ account: Account?) throws
}

/// An account store in memory: nothing survives the process.
public final class InMemoryAccountStore: AccountStore {
    private let account: NIOLockedValueBox<Account?>

    /// Creates a store holding `account`.
    public init(_ account: Account? = nil) {
        self.account = NIOLockedValueBox(account)
    }

    public func load() throws -> Account? { account.withLockedValue { $0 } }
    public func save(_ account: Account?) throws { self.account.withLockedValue { $0 = account } }
}

/// An account store in a JSON file readable only by its owner (permissions 0600), written atomically.
///
/// The default location is the user's application-support directory, under `MeteorDDP/<name>.json`.
/// A file with wider permissions or unreadable content is rejected with ``AccountError/Kind/unreadableStore``.
public struct FileAccountStore: AccountStore {
    /// The file.
    public let url: URL

    /// Creates a store at `url`.
    public init(url: URL) {
        self.url = url
    }

    /// Creates a store in the application-support directory, one file per `name` (for example per server).
    public init(name: String) throws {
        let base = try FileManager.default.url(
            for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        let safe = name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" }
        self.url = base.appendingPathComponent("MeteorDDP", isDirectory: true).appendingPathComponent(
            String(safe) + ".json")
    }

    /// Reads the file; a file that is not there (or is removed while it is read, by a concurrent `save(nil)`) is
    /// no account.
    public func load() throws -> Account? {
        let path = url.path
        let attributes: [FileAttributeKey: Any]
        let data: Data
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
            data = try Data(contentsOf: url)
        } catch {
            if !FileManager.default.fileExists(atPath: path) { return nil }
            throw AccountError(.unreadableStore, "cannot read \(path)")
        }
        if let permissions = attributes[.posixPermissions] as? NSNumber, permissions.intValue & 0o077 != 0 {
            throw AccountError(
                .unreadableStore,
                "\(path) is readable by others (permissions \(String(permissions.intValue, radix: 8))); "
                    + "refusing to use it"
            )
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            return try decoder.decode(Account.self, from: data)
        } catch {
            throw AccountError(.unreadableStore, "\(path) does not hold a valid account")
        }
    }

    /// Writes the account to a temporary file beside `url` and renames it over `url` (`rename(2)`: atomic, and a
    /// concurrent `save` or `load` sees the old file or the new one, never a missing or half-written one). `nil`
    /// unlinks the file; a file already gone (another `save(nil)` got there first) is not an error.
    public func save(_ account: Account?) throws {
        let fileManager = FileManager.default
        do {
            guard let account else {
                if unlink(url.path) != 0 && errno != ENOENT {
                    throw AccountError(.unwritableStore, "cannot remove the account at \(url.path)")
                }
                return
            }
            try fileManager.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .millisecondsSince1970
            let data = try encoder.encode(account)
            let temporary = url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.lastPathComponent).\(UUID().uuidString)")
            guard fileManager.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
            else {
                throw AccountError(.unwritableStore, "cannot write \(temporary.path)")
            }
            if rename(temporary.path, url.path) != 0 {
                unlink(temporary.path)
                throw AccountError(.unwritableStore, "cannot move the account into \(url.path)")
            }
        } catch let error as AccountError {
            throw error
        } catch {
            throw AccountError(.unwritableStore, "cannot store the account at \(url.path)")
        }
    }
}
