// infer's entry point on Linux: the arguments are the bytes the shell gave (UTF-8 in practice).
#include "app/entry.h"

int main(int argc, char** argv) { return infer::app::main_utf8(argc, argv); }
