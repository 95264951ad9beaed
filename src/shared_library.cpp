// shared_library.cpp — the one source of libember.so (target ember_shared). The library's
// code comes whole from the stage libraries it links (src/CMakeLists.txt); CMake needs a
// source of the target's own, and this is it.
