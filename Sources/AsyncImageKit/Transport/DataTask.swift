/// A transfer started by a ``DataLoader``: a handle to cancel it.
final class DataTask: Sendable {
    let transfer: CurlTransfer

    init(transfer: CurlTransfer) {
        self.transfer = transfer
    }

    /// Cancels the transfer: a running one is stopped and its libcurl handle
    /// freed on the transport thread's next turn, and the completion handler is
    /// never called. No effect once the completion handler has been called
    /// (or, for a transfer with a ``DataTransferObserver/partial`` handler,
    /// once its outcome has been handed to the completion queue).
    ///
    /// - Returns: whether the completion handler is now sure never to run.
    @discardableResult
    func cancel() -> Bool {
        transfer.cancel()
    }

    /// Whether ``cancel()`` took effect.
    var isCancelled: Bool { transfer.isCancelled }
}
