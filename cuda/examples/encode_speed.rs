//! Host-side cost of the reference encode and validating decode (sizes the benchmark's setup).
use nwc_reference::{decode, encode, Mode, Shape, Weights};
fn main() {
    let shape = Shape::new(4096, 4096);
    let words: Vec<u16> =
        (0..shape.weights()).map(|i| half::bf16::from_f32(((i * 2654435761) % 1000) as f32 * 1e-4 - 0.05).to_bits()).collect();
    let t = std::time::Instant::now();
    let enc = encode(Mode::BF16_L0, shape, Weights::Bf16(&words)).unwrap();
    let te = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let dec = decode(&enc.matrix).unwrap();
    let td = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let x = vec![1.0f32; 4096];
    let _ = dec.matvec(&x, 1, None).unwrap();
    println!("16.8M weights: encode {te:.2} s, decode {td:.2} s, matvec {:.2} s", t.elapsed().as_secs_f64());
}
