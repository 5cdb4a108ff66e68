import Foundation

/// The chunks of a multipart stream part: a sequence made afresh for every send, or a one-shot sequence that
/// only the first reading of the form may take.
struct PartChunks: Sendable {
    /// The part's name, for errors.
    let name: String
    /// The part's length in bytes, when declared.
    let length: Int64?
    private let make: @Sendable () -> ChunkIterator
    /// Whether the sequence has been taken; `nil` for a part whose sequence is made afresh for every send.
    private let taken: LockedState<Bool>?

    init(name: String, length: Int64?, isOneShot: Bool, make: @escaping @Sendable () -> ChunkIterator) {
        self.name = name
        self.length = length
        self.make = make
        taken = isOneShot ? LockedState(false) : nil
    }

    /// Whether every reading of the form may read this part again.
    var isReplayable: Bool { taken == nil }

    /// The part's chunks for one reading of the form.
    ///
    /// - Throws: ``UploadError`` for a one-shot part that an earlier reading has taken.
    func iterator() throws -> ChunkIterator {
        if let taken {
            let wasTaken = taken.withLock { taken in
                defer { taken = true }
                return taken
            }
            guard !wasTaken else {
                throw UploadError(
                    "the multipart part \"\(name)\" is a one-shot stream that an earlier reading of the form has "
                        + "already taken: the form can be sent only once"
                )
            }
        }
        return make()
    }
}
