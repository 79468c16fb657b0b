//! Handshake rate per source IP: a token bucket per address, refilled continuously. The table is bounded:
//! when it grows past MAX_TRACKED, buckets that are full again (idle addresses) are dropped.

use std::{collections::HashMap, net::IpAddr, time::Instant};

const MAX_TRACKED: usize = 65_536;

pub struct HandshakeLimiter {
    rate: f64,
    burst: f64,
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl HandshakeLimiter {
    pub fn new(rate: f64, burst: f64) -> Self {
        HandshakeLimiter { rate, burst: burst.max(1.0), buckets: HashMap::new() }
    }

    pub fn allow(&mut self, ip: IpAddr) -> bool {
        let now = Instant::now();
        if self.buckets.len() >= MAX_TRACKED {
            let (rate, burst) = (self.rate, self.burst);
            self.buckets.retain(|_, (t, at)| *t + now.duration_since(*at).as_secs_f64() * rate < burst);
        }
        let burst = self.burst;
        let (tokens, at) = self.buckets.entry(ip.to_canonical()).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.rate).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
