# GO for offline enrichment, written at image build from Debian's GO.db and org.Hs.eg.db
# (their versions pin it): Rscript --vanilla go.R OUTDIR
#   go-basic.obo                   the ontology (is_a, part_of, regulates), for goatools
#   human.gene2go.tsv              direct human annotations: entrez, symbol, go_id, evidence, ontology
#   human.id2gos                   symbol <TAB> GO;GO;... (goatools' read_associations format)
#   GO_{Biological_Process,Molecular_Function,Cellular_Component}.human.gmt
#                                  gene sets with annotations propagated up the ontology (5 to
#                                  2000 genes), named "term (GO:id)" as Enrichr's GO libraries are
#   VERSION                        the GO and Entrez Gene source dates and the packages' versions
suppressPackageStartupMessages({ library(GO.db); library(org.Hs.eg.db) })
out <- commandArgs(trailingOnly = TRUE)[1]
dir.create(out, recursive = TRUE, showWarnings = FALSE)

info <- function(db) { d <- db; setNames(d$value, d$name) }
go_info <- info(GO_dbInfo()); eg_info <- info(org.Hs.eg_dbInfo())
writeLines(c(
  paste0("GO.db ", packageVersion("GO.db"), "; GO source date ", go_info[["GOSOURCEDATE"]]),
  paste0("org.Hs.eg.db ", packageVersion("org.Hs.eg.db"), "; Entrez Gene source date ",
         eg_info[["EGSOURCEDATE"]], "; its GO source date ", eg_info[["GOSOURCEDATE"]])),
  file.path(out, "VERSION"))

terms <- toTable(GOTERM)[, c(1, 3, 4, 5)]
names(terms) <- c("go_id", "term", "ontology", "definition")
# GO.db's root of roots ("all", ontology "universal") is no GO term.
terms <- terms[!duplicated(terms$go_id) & terms$ontology %in% c("BP", "MF", "CC"), ]
terms <- terms[order(terms$go_id), ]
namespace <- c(BP = "biological_process", MF = "molecular_function", CC = "cellular_component")
parents <- do.call(rbind, lapply(list(GOBPPARENTS, GOMFPARENTS, GOCCPARENTS), function(m) {
  t <- toTable(m); data.frame(go_id = t[[1]], parent = t[[2]], rel = t[[3]])
}))
parents <- parents[parents$rel != "all" & parents$parent != "all", ]
by_child <- split(parents, parents$go_id)
clean <- function(x) gsub('["\\\\]', "", gsub("[\r\n]+", " ", x))
con <- file(file.path(out, "go-basic.obo"), "w")
writeLines(c("format-version: 1.2", paste0("data-version: releases/", go_info[["GOSOURCEDATE"]]),
             "ontology: go", ""), con)
for (i in seq_len(nrow(terms))) {
  id <- terms$go_id[i]
  p <- by_child[[id]]
  rel <- if (is.null(p)) character(0) else
    ifelse(p$rel == "isa", paste0("is_a: ", p$parent),
           paste0("relationship: ", gsub(" ", "_", p$rel), " ", p$parent))
  writeLines(c("[Term]", paste0("id: ", id), paste0("name: ", clean(terms$term[i])),
               paste0("namespace: ", namespace[[terms$ontology[i]]]),
               paste0('def: "', clean(terms$definition[i]), '" []'), sort(rel), ""), con)
}
close(con)

symbol <- toTable(org.Hs.egSYMBOL)
sym <- setNames(symbol$symbol, symbol$gene_id)
direct <- toTable(org.Hs.egGO)
direct <- data.frame(entrez = direct[[1]], symbol = unname(sym[direct[[1]]]), go_id = direct[[2]],
                     evidence = direct[[3]], ontology = direct[[4]])
direct <- direct[order(direct$symbol, direct$go_id), ]
write.table(direct, file.path(out, "human.gene2go.tsv"), sep = "\t", quote = FALSE,
            row.names = FALSE)
per_gene <- tapply(direct$go_id, direct$symbol, function(x) paste(sort(unique(x)), collapse = ";"))
writeLines(paste(names(per_gene), per_gene, sep = "\t"), file.path(out, "human.id2gos"))

all <- toTable(org.Hs.egGO2ALLEGS)
all <- data.frame(go_id = all[[2]], symbol = unname(sym[all[[1]]]), ontology = all[[4]])
all <- unique(all[!is.na(all$symbol), ])
names_of <- setNames(terms$term, terms$go_id)
files <- c(BP = "GO_Biological_Process", MF = "GO_Molecular_Function", CC = "GO_Cellular_Component")
for (o in names(files)) {
  sets <- split(all$symbol[all$ontology == o], all$go_id[all$ontology == o])
  sets <- lapply(sets, function(g) sort(unique(g)))
  sets <- sets[lengths(sets) >= 5 & lengths(sets) <= 2000]
  lines <- vapply(names(sets), function(id) paste(c(paste0(clean(names_of[[id]]), " (", id, ")"),
                                                    id, sets[[id]]), collapse = "\t"), "")
  writeLines(lines, file.path(out, paste0(files[[o]], ".human.gmt")))
}
