//! A process folder sent as an archive (tar, gzipped tar or zip) instead of its one
//! `PROCESS.md`: the file is taken from the archive, with the folder it sits in as the
//! process's folder name. Nothing is unpacked to disk, and no entry is read past the
//! size of the largest PROCESS.md taken, so an archive bomb costs nothing.

use std::io::Read;

/// What an archive held.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// The PROCESS.md.
    pub(crate) source: Vec<u8>,
    /// The folder it sits in, when it sits in one.
    pub(crate) folder: Option<String>,
}

/// How a file is packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Packing {
    Zip,
    Tar,
    TarGz,
}

fn packing(bytes: &[u8]) -> Option<Packing> {
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        Some(Packing::Zip)
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        Some(Packing::TarGz)
    } else if bytes.get(257..262) == Some(b"ustar") {
        Some(Packing::Tar)
    } else {
        None
    }
}

/// Whether `bytes` is an archive rather than a PROCESS.md.
pub(crate) fn is_archive(bytes: &[u8]) -> bool {
    packing(bytes).is_some()
}

/// The one PROCESS.md of an archive, at most `max` bytes; every problem otherwise.
pub(crate) fn process_file(bytes: &[u8], max: usize) -> Result<Found, Vec<String>> {
    let found = match packing(bytes) {
        Some(Packing::Zip) => from_zip(bytes, max),
        Some(Packing::Tar) => from_tar(bytes, max),
        Some(Packing::TarGz) => from_tar(flate2::read::GzDecoder::new(bytes), max),
        None => Err("file: not a tar, tar.gz or zip archive".to_owned()),
    }
    .map_err(|problem| vec![problem])?;
    match found.as_slice() {
        [] => Err(vec!["file: the archive holds no PROCESS.md".to_owned()]),
        [(path, source)] => {
            if source.len() > max {
                return Err(vec![format!("{path}: more than {max} bytes")]);
            }
            Ok(Found {
                source: source.clone(),
                folder: folder_of(path),
            })
        }
        several => Err(vec![format!(
            "file: the archive holds {} PROCESS.md files ({}); send one process at a time",
            several.len(),
            several
                .iter()
                .map(|(path, _)| path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )]),
    }
}

/// The name of the folder a PROCESS.md sits in: the last directory of its path.
fn folder_of(path: &str) -> Option<String> {
    let (directory, _) = path.trim_start_matches("./").rsplit_once('/')?;
    directory
        .rsplit('/')
        .next()
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

fn is_process_file(path: &str) -> bool {
    path.rsplit('/').next() == Some("PROCESS.md")
}

/// Reads at most `max + 1` bytes, so an oversized entry is seen without being read.
fn read_capped(reader: impl Read, max: usize) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    reader
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| format!("file: the archive could not be read ({error})"))?;
    Ok(bytes)
}

fn from_zip(bytes: &[u8], max: usize) -> Result<Vec<(String, Vec<u8>)>, String> {
    let unreadable = |error: zip::result::ZipError| format!("file: not a readable zip archive ({error})");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(unreadable)?;
    let mut found = Vec::new();
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(unreadable)?;
        let path = entry.name().map_err(unreadable)?.into_owned();
        if entry.is_file() && is_process_file(&path) {
            found.push((path, read_capped(entry, max)?));
        }
    }
    Ok(found)
}

fn from_tar(reader: impl Read, max: usize) -> Result<Vec<(String, Vec<u8>)>, String> {
    let unreadable = |error: std::io::Error| format!("file: not a readable tar archive ({error})");
    let mut archive = tar::Archive::new(reader);
    let mut found = Vec::new();
    for entry in archive.entries().map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?.to_string_lossy().into_owned();
        if entry.header().entry_type().is_file() && is_process_file(&path) {
            found.push((path, read_capped(entry, max)?));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    const PROCESS: &[u8] = b"---\nname: expense\n---\nBody.\n";

    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, bytes) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, *bytes).expect("appended");
        }
        builder.into_inner().expect("a tar")
    }

    fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (path, bytes) in files {
            writer
                .start_file(*path, zip::write::SimpleFileOptions::default())
                .expect("started");
            writer.write_all(bytes).expect("written");
        }
        writer.finish().expect("a zip").into_inner()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).expect("compressed");
        encoder.finish().expect("a gzip")
    }

    #[test]
    fn each_packing_gives_the_process_file_and_its_folder() {
        let files: &[(&str, &[u8])] = &[("expense/PROCESS.md", PROCESS), ("expense/notes.txt", b"notes")];
        for bytes in [tar_of(files), gzip(&tar_of(files)), zip_of(files)] {
            assert!(is_archive(&bytes));
            let found = process_file(&bytes, 1000).expect("found");
            assert_eq!(found.source, PROCESS);
            assert_eq!(found.folder.as_deref(), Some("expense"));
        }
        let flat = process_file(&zip_of(&[("PROCESS.md", PROCESS)]), 1000).expect("found");
        assert_eq!(flat.folder, None);
    }

    #[test]
    fn an_archive_with_no_or_several_process_files_is_refused_by_name() {
        let none = process_file(&tar_of(&[("readme.md", b"hi")]), 1000).expect_err("refused");
        assert_eq!(none, ["file: the archive holds no PROCESS.md"]);
        let two = zip_of(&[("a/PROCESS.md", PROCESS), ("b/PROCESS.md", PROCESS)]);
        let several = process_file(&two, 1000).expect_err("refused");
        assert!(several[0].contains("a/PROCESS.md, b/PROCESS.md"), "{several:?}");
    }

    #[test]
    fn an_oversized_process_file_is_refused_without_reading_it_whole() {
        let big = vec![b'x'; 10_000];
        let refused = process_file(&gzip(&tar_of(&[("big/PROCESS.md", &big)])), 100).expect_err("refused");
        assert_eq!(refused, ["big/PROCESS.md: more than 100 bytes"]);
    }

    #[test]
    fn a_plain_process_file_is_no_archive() {
        assert!(!is_archive(PROCESS));
        assert!(process_file(b"PK\x03\x04garbage", 100).is_err());
    }
}
