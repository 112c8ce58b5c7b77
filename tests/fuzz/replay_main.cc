// A main() for the fuzz targets in builds without libFuzzer (gcc, the sanitizer suite): runs
// LLVMFuzzerTestOneInput once on every file named on the command line or found (not
// recursively) in a directory named there. CTest uses it to replay each target's seed corpus and
// regression inputs, so a fixed crash stays fixed in every build.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

int RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  int files = 0, errors = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st {};
    if (stat(argv[i], &st) != 0) continue;  // an absent regression dir is fine
    if (!S_ISDIR(st.st_mode)) {
      errors += RunFile(argv[i]);
      ++files;
      continue;
    }
    DIR* dir = opendir(argv[i]);
    if (dir == nullptr) continue;
    while (dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name[0] == '.') continue;
      errors += RunFile(std::string(argv[i]) + "/" + name);
      ++files;
    }
    closedir(dir);
  }
  std::printf("replay: %d inputs, %d unreadable\n", files, errors);
  return errors == 0 && files > 0 ? 0 : 1;
}
