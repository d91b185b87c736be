fn main() {
    // The config lives at the repository root, beside the icons it names.
    tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json"))
        .expect("tauri.conf.json and the icons it names are valid");
}
