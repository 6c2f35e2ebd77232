// Links libnanscope: from NANSCOPE_LIB_DIR when it is set (a build tree; also put on the binary's
// run path), else from the linker's default path (the installed package).
fn main() {
    println!("cargo:rerun-if-env-changed=NANSCOPE_LIB_DIR");
    if let Ok(dir) = std::env::var("NANSCOPE_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=nanscope");
}
