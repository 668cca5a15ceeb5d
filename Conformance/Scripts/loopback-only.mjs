// Preloaded (`node --import`) into the suite's origin server, which calls
// `server.listen(port)` and so would listen on every interface: every HTTP(S)
// server of this process listens on 127.0.0.1 only, and any other address is
// refused. Once listening, it prints `conformance-origin-port PORT`, which is
// how the command learns the port (it passes port 0: the system picks a free one).
import http from 'node:http'
import https from 'node:https'
import './parent-watch.mjs'

const LOOPBACK = '127.0.0.1'

/** `listen`'s arguments with the host pinned to 127.0.0.1 (throws for any other host, or for a pipe or handle). */
function pinnedToLoopback (args) {
  const [first, second] = args
  if (first !== null && typeof first === 'object') {
    if (first.path !== undefined || first.fd !== undefined || first.handle !== undefined || first._handle !== undefined) {
      throw new Error('loopback-only: listening on a pipe or handle is not allowed')
    }
    if (first.host !== undefined && first.host !== LOOPBACK) {
      throw new Error(`loopback-only: refusing to listen on ${first.host}`)
    }
    return [{ ...first, host: LOOPBACK }, ...args.slice(1)]
  }
  const isPort = first === undefined || typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))
  if (!isPort) throw new Error(`loopback-only: refusing to listen on ${String(first)}`)
  if (typeof second === 'string') {
    if (second !== LOOPBACK) throw new Error(`loopback-only: refusing to listen on ${second}`)
    return args
  }
  return [first ?? 0, LOOPBACK, ...args.slice(1)]
}

for (const Server of [http.Server, https.Server]) {
  const listen = Server.prototype.listen
  Server.prototype.listen = function (...args) {
    this.once('listening', () => {
      const address = this.address()
      if (address === null || typeof address !== 'object' || address.address !== LOOPBACK) {
        console.error(`loopback-only: listening on ${JSON.stringify(address)}, not ${LOOPBACK}; stopping`)
        process.exit(1)
      }
      process.stdout.write(`conformance-origin-port ${address.port}\n`)
    })
    return listen.apply(this, pinnedToLoopback(args))
  }
}
