/* api's private header */
