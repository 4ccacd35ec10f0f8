// Loaded into every Node process of the rehearsal (NODE_OPTIONS=--require): the CDK CLI and
// jsii's kernel. A TCP connection or DNS lookup to anything but loopback is refused and written
// to $FMC_NET_LOG, which the rehearsal asserts is empty. Unix sockets (paths) are local.
'use strict';
const fs = require('fs');
const net = require('net');
const dns = require('dns');

const logFile = process.env.FMC_NET_LOG;
const isLoopback = (host) => host === undefined || host === null || host === '' || host === 'localhost'
  || host === '::1' || /^127\./.test(host) || /^::ffff:127\./.test(host);

function refuse(what) {
  if (logFile) fs.appendFileSync(logFile, `node ${process.pid} ${what}\n`);
  return new Error(`rehearsal network guard: ${what} refused (loopback only)`);
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  let options = Array.isArray(args[0]) ? args[0][0] : args[0];
  let host;
  let port;
  if (options !== null && typeof options === 'object') {
    if (options.path) return connect.apply(this, args);
    host = options.host;
    port = options.port;
  } else if (typeof options === 'string' && !/^\d+$/.test(options)) {
    return connect.apply(this, args);  // a Unix socket path
  } else {
    port = options;
    host = typeof args[1] === 'string' ? args[1] : undefined;
  }
  if (!isLoopback(host)) {
    const error = refuse(`connect ${host}:${port}`);
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return connect.apply(this, args);
};

const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname, ...rest) {
  if (!isLoopback(hostname)) {
    const callback = rest[rest.length - 1];
    const error = refuse(`resolve ${hostname}`);
    error.code = 'ENOTFOUND';
    if (typeof callback === 'function') process.nextTick(() => callback(error));
    return {};
  }
  return lookup.call(this, hostname, ...rest);
};
const promisesLookup = dns.promises.lookup;
dns.promises.lookup = async function guardedPromisesLookup(hostname, ...rest) {
  if (!isLoopback(hostname)) throw refuse(`resolve ${hostname}`);
  return promisesLookup.call(this, hostname, ...rest);
};
