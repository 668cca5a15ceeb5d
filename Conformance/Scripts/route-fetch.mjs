// Routes the suite's client's fetches: `/test/...` to the relay (the cache
// under test), `/config/...` and `/state/...` straight to the origin (the
// suite's side channel: a PUT with a body and a GET of what the origin saw,
// which must not go through a cache). Loaded before the suite's modules: by
// run-suite.mjs, and with `node --import` for the suite's own cli.mjs.
//
// CONFORMANCE_ORIGIN and CONFORMANCE_RELAY: http://127.0.0.1:PORT each. Only
// URLs on either of them are rewritten; redirects that the fetch follows are
// resolved against the relay's URL, so they stay on it.
import './parent-watch.mjs'

const origin = new URL(process.env.CONFORMANCE_ORIGIN)
const relay = new URL(process.env.CONFORMANCE_RELAY)
const plainFetch = globalThis.fetch

globalThis.fetch = function routedFetch (input, init) {
  if (typeof input === 'string' || input instanceof URL) {
    const url = new URL(input)
    if (url.host === origin.host || url.host === relay.host) {
      const target = url.pathname.startsWith('/test/') ? relay : origin
      url.protocol = target.protocol
      url.host = target.host
      input = url.href
    }
  } else {
    // The suite passes URLs as strings; a Request would escape the routing.
    throw new TypeError('route-fetch: only string or URL inputs are routed')
  }
  return plainFetch.call(this, input, init)
}
