// tests/core/test_json_reader.cpp — being written
