// A libcudnn.so.9 whose loading never ends: its constructor waits forever, as a library blocked on
// a lock or a hung device would. The probe must give up at its deadline and name it.
#include <unistd.h>

namespace {
__attribute__((constructor)) void never_return() {
  for (;;) pause();
}
}  // namespace
