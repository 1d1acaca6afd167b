use quiver_proto::{Manifest, ServerEntry, catalog::Catalog};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let c = Catalog::load(std::path::Path::new(&path), "d").unwrap();
    let entries = c.servers.into_iter().map(|s| ServerEntry { id: s.id.clone(), description: s.description, namespace: s.id, tags: vec![], group: String::new(), validation: Default::default(), tools: s.tools }).collect();
    let m = Manifest::build(1, entries);
    for t in &m.tools {
        println!("{}", t.stub.declaration);
        eprintln!("SIG {}\nSUM {}\nNAME {}", t.stub.signature, t.stub.summary, t.exposed_name);
    }
}
