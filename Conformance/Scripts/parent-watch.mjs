// Ends this node process once the asyncimage-conformance process that started
// it is gone (its parent pid changes when it is reparented): the origin and the
// suite's client never outlive the command, even after a SIGKILL, which runs no
// cleanup code on the Swift side.
const parent = process.ppid

setInterval(() => {
  if (process.ppid !== parent) process.exit(1)
}, 250).unref()
