//! The plane a `2d` index keys legacy pairs in: `[min, max)` on both axes cut into a
//! `2^bits` grid, a point's key the interleaved bits of its cell (a Z-order curve, MongoDB's
//! geohash order), and rectangles covered by the ranges of quadtree cells that meet them.

use crate::error::{MongoError, Result};

/// A `2d` index's grid (`bits`, `min`, `max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlatIndexParams {
    pub bits: u32,
    pub min: f64,
    pub max: f64,
}

/// Most cells a rectangle is covered by: the scan's ranges stay few.
const MAX_COVER_CELLS: usize = 64;

impl FlatIndexParams {
    fn cell(&self, v: f64) -> u64 {
        let scaled = (v - self.min) / (self.max - self.min) * (1u64 << self.bits) as f64;
        (scaled.max(0.0) as u64).min((1u64 << self.bits) - 1)
    }

    fn interleave(&self, x: u64, y: u64) -> u64 {
        let mut out = 0u64;
        for i in (0..self.bits).rev() {
            out = (out << 2) | (((x >> i) & 1) << 1) | ((y >> i) & 1);
        }
        out
    }

    /// As the index stores it: signed, in the same order as the unsigned hash.
    fn signed(hash: u64, bits: u32) -> i64 {
        // Shifted to the top so that 32 bits a side still order as signed numbers.
        let top = hash << (64 - 2 * bits);
        (top ^ (1 << 63)) as i64
    }

    /// The key of a point, or MongoDB's error for one outside `[min, max)`.
    pub fn key(&self, x: f64, y: f64) -> Result<i64> {
        let inside = |v: f64| v >= self.min && v < self.max;
        if !inside(x) || !inside(y) {
            return Err(MongoError::location(
                13027,
                format!("point not in interval of [ {}, {} )", self.min, self.max),
            ));
        }
        Ok(Self::signed(
            self.interleave(self.cell(x), self.cell(y)),
            self.bits,
        ))
    }

    /// Inclusive key ranges covering the rectangle `lo`..`hi` (clipped to the grid).
    pub fn cover(&self, lo: (f64, f64), hi: (f64, f64)) -> Vec<(i64, i64)> {
        let (x0, x1) = (self.cell(lo.0), self.cell(hi.0));
        let (y0, y1) = (self.cell(lo.1), self.cell(hi.1));
        // Cells of `level` (0: the whole grid) are `2^(bits - level)` grid cells wide.
        let mut level = 0;
        while level < self.bits {
            let width = 1u64 << (self.bits - level - 1);
            let count = (x1 / width - x0 / width + 1) * (y1 / width - y0 / width + 1);
            if count as usize > MAX_COVER_CELLS {
                break;
            }
            level += 1;
        }
        let width = 1u64 << (self.bits - level);
        let mut ranges = Vec::new();
        for cx in x0 / width..=x1 / width {
            for cy in y0 / width..=y1 / width {
                let first = self.interleave(cx * width, cy * width);
                let span = width * width - 1;
                ranges.push((
                    Self::signed(first, self.bits),
                    Self::signed(first + span, self.bits),
                ));
            }
        }
        super::merge_ranges(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fall_in_the_cover_of_rectangles_holding_them() {
        let p = FlatIndexParams {
            bits: 26,
            min: -180.0,
            max: 180.0,
        };
        let inside = |ranges: &[(i64, i64)], k: i64| ranges.iter().any(|(a, b)| *a <= k && k <= *b);
        let cover = p.cover((-10.0, -10.0), (10.0, 10.0));
        assert!(cover.len() <= MAX_COVER_CELLS);
        for (x, y) in [(0.0, 0.0), (-10.0, 9.9), (5.5, -3.25)] {
            assert!(inside(&cover, p.key(x, y).unwrap()), "{x} {y}");
        }
        assert!(!inside(&cover, p.key(50.0, 50.0).unwrap()));
        assert_eq!(p.key(180.0, 0.0).unwrap_err().code().code(), 13027);
        let wide = FlatIndexParams { bits: 32, ..p };
        assert!(wide.key(-179.0, -179.0).unwrap() < wide.key(179.0, 179.0).unwrap());
    }
}
