import Foundation
import Testing

@testable import Courier

@Suite("ChunkPipeStateMachine")
struct ChunkPipeStateMachineTests {
    private typealias Machine = ChunkPipeStateMachine<String, String>

    private struct Boom: Error {}

    private func bytes(_ count: Int) -> Data { Data(repeating: 7, count: count) }

    @Test("a chunk written while the reader waits goes straight to it; otherwise it is buffered in order")
    func handsOverOrBuffers() {
        var machine = Machine(highWater: 100)
        guard case .wait = machine.next(consumer: "reader") else {
            Issue.record("expected a wait")
            return
        }
        guard case .resumeConsumer("reader", let data) = machine.yield(bytes(3)) else {
            Issue.record("expected the waiting reader to get the chunk")
            return
        }
        #expect(data.count == 3)
        let result1 = machine.yield(bytes(1))
        #expect(result1.isProceed)
        let result2 = machine.yield(bytes(2))
        #expect(result2.isProceed)
        #expect(machine.buffered == 3)
        let result3 = machine.next(consumer: "reader")
        #expect(result3.chunkSize == 1)
        let result4 = machine.next(consumer: "reader")
        #expect(result4.chunkSize == 2)
        #expect(machine.buffered == 0)
    }

    @Test("over the high-water mark the writer pauses, and is woken once the reader drains to half of it")
    func backpressure() {
        var machine = Machine(highWater: 10)
        let result5 = machine.yield(bytes(6))
        #expect(result5.isProceed)
        guard case .pause = machine.yield(bytes(6)) else {
            Issue.record("expected a pause")
            return
        }
        let result6 = machine.waitForDemand("writer")
        #expect(result6)
        // 12 buffered; taking 6 leaves 6 > 5: still paused.
        guard case .chunk(_, resumeProducer: nil) = machine.next(consumer: nil) else {
            Issue.record("the writer must stay paused above half the mark")
            return
        }
        guard case .chunk(_, resumeProducer: .continuation("writer")?) = machine.next(consumer: nil) else {
            Issue.record("the writer must be woken at half the mark")
            return
        }
        // A sync writer (no continuation) is woken through its handler.
        let result7 = machine.yield(bytes(11))
        #expect(result7.isPause)
        guard case .chunk(_, resumeProducer: .handler?) = machine.next(consumer: nil) else {
            Issue.record("a sync writer must be woken through its handler")
            return
        }
        let result8 = machine.waitForDemand("writer")
        #expect(!result8, "a writer that is not paused must not wait")
    }

    @Test("the end comes after the buffered chunks; an error end is thrown after them")
    func finishAfterBuffer() {
        var machine = Machine(highWater: 100)
        _ = machine.yield(bytes(4))
        let result9 = machine.finish(error: Boom())
        #expect(result9 == nil)
        #expect(machine.isEnded)
        let result10 = machine.next(consumer: "r")
        #expect(result10.chunkSize == 4)
        guard case .end(let error?) = machine.next(consumer: "r") else {
            Issue.record("expected the error")
            return
        }
        #expect(error is Boom)
        var clean = Machine(highWater: 100)
        _ = clean.next(consumer: "r")
        let result11 = clean.finish(error: nil)
        #expect(result11 == "r", "a waiting reader is resumed with the end")
        guard case .end(nil) = clean.next(consumer: "r") else {
            Issue.record("a clean end stays clean")
            return
        }
    }

    @Test("failing from the reader's side drops the buffer, resumes both sides once, and stops the transport")
    func failFromReader() {
        var machine = Machine(highWater: 4)
        _ = machine.yield(bytes(5))
        let result12 = machine.waitForDemand("writer")
        #expect(result12)
        let failure = machine.fail(Boom())
        #expect(failure?.producer == "writer")
        #expect(failure?.consumer == nil)
        #expect(failure?.stopsTransport == true)
        #expect(machine.buffered == 0)
        let second = machine.fail(Boom())
        #expect(second == nil, "a second failure does nothing")
        guard case .drop = machine.yield(bytes(1)) else {
            Issue.record("writes after the end are dropped")
            return
        }
        guard case .end(let error?) = machine.next(consumer: "r"), error is Boom else {
            Issue.record("reading after a failure throws it")
            return
        }
    }

    @Test("a batching writer buffers while the reader waits, asks for one flush, and the flush wakes the reader once")
    func bufferThenFlush() {
        var machine = Machine(highWater: 100)
        _ = machine.next(consumer: "reader")
        let first = machine.buffer(bytes(3))
        #expect(first.isScheduleFlush, "the first chunk for a waiting reader asks for a flush")
        let second = machine.buffer(bytes(4))
        #expect(second.isProceed, "a flush is arranged already")
        #expect(machine.isReaderWaiting, "buffering does not wake the reader")
        let flush = machine.flush()
        #expect(flush?.consumer == "reader")
        #expect(flush?.chunk.count == 3)
        #expect(!machine.isReaderWaiting)
        let restOfBurst = machine.next(consumer: "reader")
        #expect(restOfBurst.chunkSize == 4, "the rest of the burst is read without waiting")
        let idleFlush = machine.flush()
        #expect(idleFlush == nil, "a flush with nobody waiting does nothing")
        // After a flush, the next chunk for a waiting reader asks for a flush again.
        _ = machine.next(consumer: "reader")
        let nextBurst = machine.buffer(bytes(1))
        #expect(nextBurst.isScheduleFlush)
        // Without a waiting reader, nothing is asked: it takes the chunk when it reads.
        var running = Machine(highWater: 100)
        let notWaiting = running.buffer(bytes(2))
        #expect(notWaiting.isProceed)
        let laterRead = running.next(consumer: "reader")
        #expect(laterRead.chunkSize == 2)
    }

    @Test("past the high-water mark a batching writer wakes the waiting reader before it pauses")
    func bufferPastHighWater() {
        var machine = Machine(highWater: 10)
        _ = machine.next(consumer: "reader")
        let firstChunk = machine.buffer(bytes(2))
        #expect(firstChunk.isScheduleFlush)
        // 13 buffered; the reader takes 2 at once, and 11 > 10 still: the writer pauses.
        guard case .pause(wake: ("reader", let chunk)?) = machine.buffer(bytes(11)) else {
            Issue.record("a writer must not pause with its reader asleep")
            return
        }
        #expect(chunk.count == 2)
        // Paused until the reader drains to half the mark, which then wakes the writer.
        #expect(machine.isPaused)
        guard case .chunk(_, resumeProducer: .handler?) = machine.next(consumer: nil) else {
            Issue.record("the drained reader must wake the paused writer")
            return
        }
        // Past the mark, but back under it once the waiting reader has its chunk: the writer goes on.
        var single = Machine(highWater: 10)
        _ = single.next(consumer: "reader")
        _ = single.buffer(bytes(6))
        guard case .resumeConsumer("reader", let first) = single.buffer(bytes(6)) else {
            Issue.record("past the mark the waiting reader gets its chunk at once")
            return
        }
        #expect(first.count == 6)
        #expect(!single.isPaused)
    }

    @Test("finishing after buffered chunks leaves them to a flush, then the end")
    func finishAfterBufferedForWaitingReader() {
        var machine = Machine(highWater: 100)
        _ = machine.next(consumer: "reader")
        _ = machine.buffer(bytes(2))
        let endedReader = machine.finish(error: nil)
        #expect(endedReader == nil, "a reader with a chunk buffered is not resumed with the end")
        let flushBeforeEnd = machine.flush()
        #expect(flushBeforeEnd?.chunk.count == 2)
        guard case .end(nil) = machine.next(consumer: "reader") else {
            Issue.record("expected the end after the chunk")
            return
        }
        var failed = Machine(highWater: 100)
        _ = failed.next(consumer: "reader")
        _ = failed.buffer(bytes(2))
        let failure = failed.fail(Boom())
        #expect(failure?.consumer == "reader", "failing drops the buffer and resumes the reader")
        let flushAfterFailure = failed.flush()
        #expect(flushAfterFailure == nil)
        guard case .drop = failed.buffer(bytes(1)) else {
            Issue.record("writes after the end are dropped")
            return
        }
    }

    @Test("failing after the transport finished does not stop it again, and after the end does nothing")
    func failAfterFinish() {
        var machine = Machine(highWater: 100)
        _ = machine.yield(bytes(1))
        _ = machine.finish(error: nil)
        let failure = machine.fail(Boom())
        #expect(failure?.stopsTransport == false)
        var read = Machine(highWater: 100)
        _ = read.finish(error: nil)
        guard case .end(nil) = read.next(consumer: "r") else {
            Issue.record("expected the end")
            return
        }
        let late = read.fail(Boom())
        #expect(late == nil)
    }
}

extension ChunkPipeStateMachine.YieldAction {
    fileprivate var isProceed: Bool {
        if case .proceed = self { return true }
        return false
    }

    fileprivate var isPause: Bool {
        if case .pause = self { return true }
        return false
    }
}

extension ChunkPipeStateMachine.BufferAction {
    fileprivate var isProceed: Bool {
        if case .proceed = self { return true }
        return false
    }

    fileprivate var isScheduleFlush: Bool {
        if case .scheduleFlush = self { return true }
        return false
    }
}

extension ChunkPipeStateMachine.NextAction {
    fileprivate var chunkSize: Int? {
        if case .chunk(let data, _) = self { return data.count }
        return nil
    }
}
