-- wrk's summary as one JSON line on stdout, after wrk's own report (read by src/load/mod.rs and
-- by scripts/reproduce/experiments/hexaville.sh).
-- Latencies are in microseconds; a request that times out has no latency, only a count.
done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "ferry-wrk-summary {\"requests\":%d,\"duration_us\":%d,\"bytes\":%d," ..
    "\"connect_errors\":%d,\"read_errors\":%d,\"write_errors\":%d,\"status_errors\":%d," ..
    "\"timeouts\":%d,\"min_us\":%d,\"mean_us\":%.1f,\"max_us\":%d,\"stdev_us\":%.1f," ..
    "\"p50_us\":%d,\"p95_us\":%d,\"p99_us\":%d}\n",
    summary.requests, summary.duration, summary.bytes,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency.min, latency.mean, latency.max, latency.stdev,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
