/* proto's private header */
