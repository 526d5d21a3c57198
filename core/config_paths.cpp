// core/config_paths.cpp — being written
