// A shared library that is not an autotune plugin: it exports nothing the worker looks for.
extern "C" int some_other_library_function() { return 42; }
