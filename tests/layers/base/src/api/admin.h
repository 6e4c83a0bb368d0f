/* the one header of the library the CLI may include besides include/ */
