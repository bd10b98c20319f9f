#pragma once

#include <set>
#include <string>
#include <vector>

#include "audit/place.h"

namespace bigmac::audit {

/// A file naming another: a path given to a program or opened by it, a Python import, a
/// program a launch script starts.
struct FileReference {
  std::string from;  ///< the referring file
  int line = 0;
  std::string text;       ///< a path ("configs/pp4.yaml") or a dotted module ("model")
  bool module = false;    ///< `text` is a Python module name
  int level = 0;          ///< relative import level (from . import x: 1)
  bool launches = false;  ///< a launch script starts this program
};

/// A container attribute of a model class that holds its blocks.
struct LayerContainer {
  std::string file;
  std::string cls;
  std::string attr;
  int line = 0;
  std::string kind;  ///< ModuleList, Sequential, ModuleDict, dict, set
  std::string element;
  bool id_passed = false;    ///< each block is given its layer id
  bool keyed_by_id = false;  ///< the container is keyed by the layer id
};

/// An embedding or output head created in a model class.
struct ModelPart {
  std::string file;
  std::string cls;
  std::string attr;
  int line = 0;
  std::string role;  ///< "embedding" or "head"
  std::string ctor;
  bool staged = false;  ///< created under a pipeline-stage condition
};

/// A call that prints or logs values: which settings it names, or whether it prints a whole
/// configuration object.
struct ConfigPrint {
  std::string file;
  int line = 0;
  std::set<Setting> settings;
  bool whole = false;
};

/// A Python file's role as a training entry.
struct EntryFacts {
  std::string file;
  int main_line = 0;            ///< `if __name__ == "__main__":`, 0 when absent
  std::vector<int> init_lines;  ///< init_process_group and similar calls
};

/// Everything the readers found, before any judgement.
struct ProjectFacts {
  std::vector<std::string> files;  ///< every file read, in the order read
  std::vector<Place> places;
  std::vector<FileReference> references;
  std::vector<LayerContainer> containers;
  std::vector<ModelPart> parts;
  /// Attributes set to None or deleted under a stage condition anywhere (`if not is_first:
  /// model.tok_embeddings = None`): the stage split decides who owns them.
  std::set<std::string> stage_cleared_attrs;
  std::vector<ConfigPrint> prints;
  std::vector<EntryFacts> entries;
};

}  // namespace bigmac::audit
