import XCTest

@testable import MeteorDDP

/// `withCancellableContinuation`'s cancel action runs exactly once when the task is cancelled, whether the
/// cancellation comes while `start` is still registering or after, and never when the operation completed first.
final class CancellableContinuationTests: XCTestCase {
    func testACancellationDuringStartRunsTheCancelActionOnceStartReturnsIt() async {
        let cancelled = Locked(0)
        let task = Task {
            try await withCancellableContinuation { (_: @escaping @Sendable (Result<Int, any Error>) -> Void) in
                // Cancelled while registering: the action does not exist yet.
                withUnsafeCurrentTask { $0?.cancel() }
                return { cancelled.mutate { $0 += 1 } }
            }
        }
        await XCTAssertThrowsCancellation(task)
        XCTAssertEqual(cancelled.value, 1)
    }

    func testACancellationAfterStartRunsTheCancelActionOnce() async throws {
        let cancelled = Locked(0)
        let registered = expectation(description: "registered")
        let task = Task {
            try await withCancellableContinuation { (_: @escaping @Sendable (Result<Int, any Error>) -> Void) in
                registered.fulfill()
                return { cancelled.mutate { $0 += 1 } }
            }
        }
        await fulfillment(of: [registered], timeout: 5)
        task.cancel()
        task.cancel()
        await XCTAssertThrowsCancellation(task)
        XCTAssertEqual(cancelled.value, 1)
    }

    func testAnOperationThatCompletedFirstNeverRunsItsCancelAction() async throws {
        let cancelled = Locked(0)
        let task = Task {
            try await withCancellableContinuation { resume in
                resume(.success(7))
                return { cancelled.mutate { $0 += 1 } }
            }
        }
        let value = try await task.value
        task.cancel()
        XCTAssertEqual(value, 7)
        XCTAssertEqual(cancelled.value, 0)
    }

    // swift-format-ignore: AlwaysUseLowerCamelCase
    private func XCTAssertThrowsCancellation(
        _ task: Task<Int, any Error>, file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            _ = try await task.value
            XCTFail("returned instead of throwing CancellationError", file: file, line: line)
        } catch {
            XCTAssertTrue(error is CancellationError, "threw \(error)", file: file, line: line)
        }
    }
}
