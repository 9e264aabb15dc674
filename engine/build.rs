//! `x86_kernels`: the cfg under which the x86 SIMD kernels compile, on x86-64 with the feature
//! `cpu-kernels`. Elsewhere the ops take their portable paths.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(x86_kernels)");
    let kernels = std::env::var_os("CARGO_FEATURE_CPU_KERNELS").is_some();
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    if kernels && x86_64 {
        println!("cargo::rustc-cfg=x86_kernels");
    }
}
