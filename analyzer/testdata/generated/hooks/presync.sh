#!/bin/sh
echo waiting
sleep 10
